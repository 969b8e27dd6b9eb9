"""The MCP server in memory, through the SDK's own client, in both protocol eras: every tool,
resource and prompt, errors as isError results, and environment isolation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import TextContent, TextResourceContents

from engram import LOCAL, Engram
from engram.accounts import Scope
from engram.actors import Actor
from engram.embeddings.static import StaticEmbedder
from engram.limits import MAX_CONTENT_CHARS
from engram.limits import MAX_SEARCH_RESULTS as MAX
from engram.mcp import Binding, build_server
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock
from tests.mcp_scenario import exercise, text_of

MODES = ["auto", "legacy"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# the MCP edge is the same over every store: these tests use SQLite only
@pytest.fixture
def engram(tmp_path: Path, clock: FakeClock) -> Iterator[Engram]:
    with Engram(SQLiteStore(tmp_path / "mcp.db"), clock=clock) as e:
        yield e


@pytest.fixture
def semantic_engram(
    tmp_path: Path, clock: FakeClock, default_embedder: StaticEmbedder
) -> Iterator[Engram]:
    with Engram(SQLiteStore(tmp_path / "mcp.db"), clock=clock, embedder=default_embedder) as e:
        yield e


def client(engram: Engram, mode: str, actor: Actor = LOCAL, env: str | None = None) -> Client:
    return Client(build_server(Binding(engram, actor, env)), mode=mode)  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_in_both_eras(semantic_engram: Engram, mode: str) -> None:
    async with client(semantic_engram, mode) as c:
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        await exercise(c)


@pytest.mark.anyio
async def test_domain_errors_are_actionable_tool_errors(engram: Engram) -> None:
    async with client(engram, "auto") as c:
        missing = await c.call_tool("get_memory", {"memory_id": "mem_nope"})
        invalid = await c.call_tool("remember", {"content": "   "})
        bad_env = await c.call_tool("recall", {"query": "x", "environment": "nowhere"})
        bad_kind = await c.call_tool("feedback", {"memory_id": "mem_x", "kind": "meh"})
        dup = [await c.call_tool("create_environment", {"name": "dup"}) for _ in range(2)][1]
        restore = await c.call_tool("soul_restore", {})
        # refused by the input schema (the request model's bounds) before the tool runs
        too_many = await c.call_tool("recall", {"query": "x", "limit": MAX + 1})
        too_long = await c.call_tool("remember", {"content": "x" * (MAX_CONTENT_CHARS + 1)})
    for result, words in (
        (missing, "not_found: memory 'mem_nope' does not exist"),
        (invalid, "invalid_input: content: content must not be empty"),
        (bad_env, "not_found: environment 'nowhere' does not exist"),
        (bad_kind, "kind"),
        (dup, "conflict: environment 'dup' already exists"),
        (restore, "give snapshot_id, or block and version"),
        (too_many, f"invalid_input: limit: Input should be less than or equal to {MAX}"),
        (too_long, f"invalid_input: content: content is {MAX_CONTENT_CHARS + 1} characters"),
    ):
        assert result.is_error and result.structured_content is None
        assert words in text_of(result)
    assert "recall or list_recent show the memories" in text_of(missing)
    assert "list_environments shows" in text_of(bad_env)


@pytest.mark.anyio
async def test_a_thing_not_found_says_where_its_kind_is_listed(engram: Engram) -> None:
    """Walkthrough 35b: every not_found told the model to look with recall, list_recent or
    list_environments, for a handoff or a habit too."""
    async with client(engram, "auto") as c:
        handoff = await c.call_tool("handoff_accept", {"handoff": "hof_nope"})
        habit = await c.call_tool("profile_delete", {"habit_id": "hab_nope"})
        session = await c.call_tool("get_session_observations", {"session": "ses_nope"})
    assert "handoff_list shows" in text_of(handoff) and "recall" not in text_of(handoff)
    assert "profile_list shows" in text_of(habit)
    assert "list_sessions shows" in text_of(session)


@pytest.mark.anyio
async def test_an_argument_no_tool_takes_is_an_error_naming_it(engram: Engram) -> None:
    """REST answers an unknown field with 422; a tool dropped it without a word (an agent's
    conversation id to extract_memories, a typo of an option)."""
    async with client(engram, "auto") as c:
        unknown = await c.call_tool("recall", {"query": "x", "bogus_arg": 1})
        typo = await c.call_tool("remember", {"content": "Prefers pnpm", "importanse": 0.9})
        tools = (await c.list_tools()).tools
    assert unknown.is_error and "bogus_arg" in text_of(unknown)
    assert typo.is_error and "importanse" in text_of(typo)
    assert engram.memories.list_memories(LOCAL).total == 0  # nothing stored
    assert all(t.input_schema.get("additionalProperties") is False for t in tools)


@pytest.mark.anyio
async def test_a_conversation_named_by_its_own_id_is_delivered_once(engram: Engram) -> None:
    """extract_memories had no conversation parameter: each re-delivery made a new
    conversation, and deleting it by the agent's own id found nothing."""
    said = {"role": "user", "content": "I'm vegetarian and I live in Oslo.", "author": "Ola"}
    args = {"messages": [said], "conversation": {"id": "mcp-conv-1", "title": "intro"}}
    async with client(engram, "auto") as c:
        first = json.loads(text_of(await c.call_tool("extract_memories", args)))
        again = json.loads(text_of(await c.call_tool("extract_memories", args)))
        gone = await c.call_tool("delete_conversation", {"conversation_id": "mcp-conv-1"})
    assert first["conversation_id"] == again["conversation_id"]
    assert len(first["proposals"]) == 2 and again["proposals"] == []
    assert not gone.is_error, text_of(gone)


@pytest.mark.anyio
async def test_read_only_key_cannot_write(engram: Engram) -> None:
    engram.environments.ensure_default(LOCAL)
    reader = Actor("local", "mcp", None, frozenset({Scope.READ}))
    async with client(engram, "auto", reader) as c:
        assert not (await c.call_tool("recall", {"query": "x"})).is_error
        denied = await c.call_tool("remember", {"content": "Should not be stored"})
    assert denied.is_error and "permission_denied" in text_of(denied)


@pytest.mark.anyio
async def test_environments_are_isolated(engram: Engram) -> None:
    for name in ("alpha", "beta"):
        engram.environments.create(name, LOCAL)
    bob = engram.accounts.create_user("bob", LOCAL)
    async with client(engram, "auto", env="alpha") as alpha:
        stored = await alpha.call_tool("remember", {"content": "Alpha uses Postgres 16"})
        assert not stored.is_error
        assert await _hits(alpha, "postgres") == 1
    async with client(engram, "auto", env="beta") as beta:
        assert await _hits(beta, "postgres") == 0
        assert await _hits(beta, "postgres", environment="alpha") == 1
    async with client(engram, "legacy", Actor(bob.id, "mcp")) as other:
        hidden = await other.call_tool("recall", {"query": "postgres", "environment": "alpha"})
        assert hidden.is_error and "not_found" in text_of(hidden)
        assert await _hits(other, "postgres") == 0


async def _hits(c: Client, query: str, **args: Any) -> int:
    result = await c.call_tool("recall", {"query": query, **args})
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return len(result.structured_content["items"])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_resources_and_prompts(engram: Engram, mode: str) -> None:
    engram.soul.set_block("identity", LOCAL, "You are Ada.")
    async with client(engram, mode) as c:
        for text in ("Prefers dark mode", "Lives in Lyon"):
            await c.call_tool("remember", {"content": text, "category": "preference"})
        await c.call_tool("create_episode", {"summary": "Set up the editor theme"})
        await c.call_tool(
            "create_procedure", {"name": "deploy", "description": "Ship", "steps": ["push"]}
        )
        soul = await _read(c, "engram://soul")
        prefs = json.loads(await _read(c, "engram://memories/preference"))
        episodes = json.loads(await _read(c, "engram://episodes/recent"))
        procedures = json.loads(await _read(c, "engram://procedures"))
        envs = json.loads(await _read(c, "engram://environments"))
        assert json.loads(await _read(c, "engram://memories/nothing-here")) == []
        brief = await c.get_prompt("session_brief", {"task": "theme"})
        about = await c.get_prompt("recall_about", {"topic": "dark mode"})
    assert "You are Ada." in soul
    assert {m["content"] for m in prefs} == {"Prefers dark mode", "Lives in Lyon"}
    assert episodes[0]["content"] == "Set up the editor theme"
    assert procedures[0]["procedure"]["name"] == "deploy"
    assert [e["name"] for e in envs] == ["default"]
    for prompt, words in ((brief, "You are Ada."), (about, "Prefers dark mode")):
        content = prompt.messages[0].content
        assert isinstance(content, TextContent) and words in content.text


async def _read(c: Client, uri: str) -> str:
    result = await c.read_resource(uri)
    block = result.contents[0]
    assert isinstance(block, TextResourceContents)
    return block.text


@pytest.mark.anyio
async def test_get_context_keeps_the_mark_of_a_superseded_message(engram: Engram) -> None:
    """A long message whose fact a later one superseded: its compact hit is cut before the
    mark, which it keeps; details carry the supersession."""
    chatter = " ".join(["We talked about the harbour and the bridges for a while."] * 6)
    turns = [
        {
            "role": "user",
            "author": "Caroline",
            "content": f"I live in Porto now. {chatter}",
            "created_at": "2023-05-08T14:30:00Z",
        },
        {
            "role": "user",
            "author": "Caroline",
            "content": "I moved to Lisbon last week.",
            "created_at": "2023-09-02T10:00:00Z",
        },
    ]
    query = {"query": "where does Caroline live?", "details": True}
    async with client(engram, "auto") as c:
        await c.call_tool("extract_memories", {"messages": turns})
        got = json.loads(text_of(await c.call_tool("get_context", query)))
    mark = "[superseded on 2023-09-02 by: Caroline moved to Lisbon last week"
    hit = next(h for h in got["items"] if "Porto" in h["line"])
    assert mark in hit["line"] and hit["line"].endswith("]") and len(hit["line"]) == 200
    items = [i for t in got["details"]["tiers"] for i in t["items"]]
    item = next(i for i in items if i["memory_id"] == hit["id"])
    assert [s["said_on"] for s in item["superseded"]] == ["2023-09-02"]
