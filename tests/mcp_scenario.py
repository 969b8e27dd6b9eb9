"""One scenario shared by the MCP tests of every transport: call every tool through a connected
SDK client, checking each structured result against the tool's declared output schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from mcp import Client
from mcp.types import CallToolResult, TextContent, Tool

TOOLS = {
    "remember",
    "profile_list",
    "profile_add",
    "profile_update",
    "profile_delete",
    "recall",
    "get_context",
    "preview_context",
    "get_memory",
    "update_memory",
    "delete_memory",
    "restore_memory",
    "memory_history",
    "list_recent",
    "create_episode",
    "search_episodes",
    "create_procedure",
    "record_procedure_outcome",
    "search_procedures",
    "soul_get",
    "soul_update_block",
    "soul_apply_preset",
    "soul_snapshot",
    "soul_restore",
    "list_environments",
    "create_environment",
    "feedback",
    "extract_memories",
    "delete_conversation",
    "maintain",
    "list_sessions",
    "get_session_observations",
    "search_observations",
    "list_llm_providers",
    "set_llm_provider",
    "remove_llm_provider",
    "handoff_begin",
    "handoff_list",
    "handoff_accept",
    "handoff_cancel",
}
RESOURCES = {
    "engram://soul",
    "engram://environments",
    "engram://episodes/recent",
    "engram://procedures",
}
TEMPLATES = {"engram://memories/{category}"}
PROMPTS = {"session_brief", "recall_about"}


class Caller:
    """Calls tools and checks every result: not an error, structured output valid against the
    tool's output schema, and the same JSON in the text block."""

    def __init__(self, client: Client, tools: list[Tool]) -> None:
        self.client = client
        self.tools = {t.name: t for t in tools}
        self.called: set[str] = set()

    async def __call__(self, name: str, /, **arguments: Any) -> Any:
        result = await self.client.call_tool(name, arguments)
        assert not result.is_error, f"{name}: {text_of(result)}"
        schema = self.tools[name].output_schema
        assert schema is not None, name
        jsonschema.validate(result.structured_content, schema)
        assert json.loads(text_of(result)) == result.structured_content
        self.called.add(name)
        return result.structured_content

    async def error(self, name: str, /, **arguments: Any) -> str:
        result = await self.client.call_tool(name, arguments)
        assert result.is_error, name
        assert result.structured_content is None
        return text_of(result)


def text_of(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def check_listings(client: Client) -> list[Tool]:
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    for t in tools:
        assert t.description and t.title and t.output_schema, t.name
        assert t.input_schema["type"] == "object"
        assert t.annotations is not None and t.annotations.open_world_hint is False
    by_name = {t.name: t for t in tools}
    assert by_name["recall"].annotations and by_name["recall"].annotations.read_only_hint
    delete = by_name["delete_memory"].annotations
    assert delete and delete.destructive_hint and not delete.read_only_hint
    remember = by_name["remember"].annotations
    assert remember and remember.destructive_hint is False and remember.idempotent_hint is False
    assert {str(r.uri) for r in (await client.list_resources()).resources} == RESOURCES
    templates = (await client.list_resource_templates()).resource_templates
    assert {t.uri_template for t in templates} == TEMPLATES
    assert {p.name for p in (await client.list_prompts()).prompts} == PROMPTS
    assert client.instructions and len(client.instructions.encode()) < 2048
    return tools


async def exercise(client: Client, env: str | None = None) -> Caller:
    """Every tool once (most more), in a story a model might follow. ``env`` is passed where
    a tool takes an environment (None: the session's)."""
    call = Caller(client, await check_listings(client))
    where = {} if env is None else {"environment": env}

    habit = await call("profile_add", text="Always use uv, in all my projects")
    assert habit["promoted"] and habit["id"].startswith("hab_")
    assert [h["id"] for h in (await call("profile_list"))["items"]] == [habit["id"]]
    changed = await call("profile_update", habit_id=habit["id"], text="Prefer uv over pip")
    assert changed["text"] == "Prefer uv over pip"
    assert (await call("profile_delete", habit_id=habit["id"]))["id"] == habit["id"]
    assert (await call("profile_list", candidates=True))["items"] == []

    made = await call(
        "remember",
        content="The user prefers pnpm over npm",
        category="preference",
        tags=["js"],
        importance=0.8,
        **where,
    )
    assert made["action"] == "created"
    fact = made["memory"]["id"]
    again = await call("remember", content="The user prefers pnpm over npm", **where)
    assert again["action"] == "merged" and again["absorbed_into"] == fact

    found = await call("recall", query="pnpm", **where)
    assert found["items"][0]["id"] == fact and "pnpm" in found["items"][0]["line"]
    assert found["result_tokens"] > 0 and found.get("details") is None
    full = await call("recall", query="pnpm", details=True, **where)
    assert set(full["details"][0]["breakdown"]) >= {"relevance", "importance", "recency"}
    assert full["result_tokens"] > found["result_tokens"]
    assert (await call("get_memory", memory_id=fact))["content"].endswith("over npm")
    edited = await call("update_memory", memory_id=fact, importance=0.9, reason="matters")
    assert edited["importance"] == 0.9
    liked = await call("feedback", memory_id=fact, kind="helpful")
    assert liked["confidence_after"] > liked["confidence_before"]
    stale = await call("feedback", memory_id=fact, kind="outdated", note="uses bun now")
    assert stale["confidence_after"] < stale["confidence_before"]
    assert (await call("delete_memory", memory_id=fact))["status"] == "deleted"
    assert (await call("restore_memory", memory_id=fact))["status"] == "active"
    history = await call("memory_history", memory_id=fact)
    assert [v["action"] for v in history["versions"]][-2:] == ["delete", "restore"]
    assert (await call("list_recent", layer="fact", **where))["total"] >= 1

    episode = await call(
        "create_episode",
        summary="Migrated the build from npm to pnpm",
        key_decisions=["pnpm workspaces"],
        open_questions=["CI cache?"],
        agent="test",
        **where,
    )
    assert episode["layer"] == "episode"
    assert (await call("search_episodes", query="migrated build", **where))["items"]
    proc = await call(
        "create_procedure",
        name="release",
        description="Cut a release",
        steps=["bump version", "tag", "push"],
        trigger="when shipping",
        **where,
    )
    counted = await call("record_procedure_outcome", memory_id=proc["id"], success=True)
    assert counted["procedure"]["success_count"] == 1
    assert (await call("search_procedures", query="release", **where))["items"]

    context = await call("get_context", query="build tooling", max_tokens=800, **where)
    assert "pnpm" in context["text"] and context["tokens"] <= 800
    assert (await call("preview_context", **where))["preview"] is True

    block = await call("soul_update_block", block="identity", text="You are Ada, careful.")
    assert block["text"] == "You are Ada, careful."
    assert (await call("soul_get", block="identity", **where))["blocks"][0]["text"].startswith(
        "You are Ada"
    )
    snap = await call("soul_snapshot", label="before preset")
    preset = await call("soul_apply_preset", preset="technical")
    assert preset["changed"]
    restored = await call("soul_restore", snapshot_id=snap["id"])
    assert restored["restored"] == "snapshot" and restored["changed"]
    one = await call("soul_restore", block="identity", version=1)
    assert one["changed"][0]["name"] == "identity"

    made_env = await call("create_environment", name=f"side-{env or 'project'}")
    listed = await call("list_environments")
    assert made_env["id"] in {e["id"] for e in listed["environments"]}

    extracted = await call(
        "extract_memories",
        messages=[
            {"role": "user", "content": "I always use black with a line length of 100."},
            {"role": "assistant", "content": "Noted, black at 100."},
        ],
        dry_run=True,
        **where,
    )
    assert extracted["dry_run"] is True
    gone = await call.error("delete_conversation", conversation_id="cnv_nope")
    assert "not_found: conversation 'cnv_nope' does not exist" in gone  # tests/test_erasure.py
    call.called.add("delete_conversation")
    report = await call("maintain", **where)
    assert report["dry_run"] is True

    sessions = await call("list_sessions", **where)
    assert sessions == {"sessions": []}  # nothing captured by hooks in this story
    found = await call("search_observations", query="pnpm", **where)
    assert found == {"observations": []}
    missing = await call.error("get_session_observations", session="ses_nope")
    assert "not_found: no captured session ses_nope" in missing
    call.called.add("get_session_observations")

    local = {"name": "scenario-llm", "model": "llama3", "base_url": "http://localhost:11434/v1"}
    assert (await call("set_llm_provider", **local))["has_key"] is False
    listed = await call("list_llm_providers")
    assert "scenario-llm" in {p["name"] for p in listed["providers"]}
    assert (await call("remove_llm_provider", name="scenario-llm"))["url"] == local["base_url"]
    left = await call(
        "handoff_begin",
        summary="Half-way through the pnpm migration",
        next_steps=["update the lock file"],
        from_agent="claude",
        **where,
    )
    assert left["state"] == "open" and left["from_agent"] == "claude"
    waiting = await call("handoff_list")
    assert left["id"] in {h["id"] for h in waiting["handoffs"]}
    taken = await call("handoff_accept", handoff=left["id"], agent="codex")
    assert taken["state"] == "accepted" and taken["accepted_agent"] == "codex"
    again = await call.error("handoff_accept", handoff=left["id"])
    assert f"conflict: handoff {left['id']} is already accepted by" in again
    other = await call("handoff_begin", summary="Never mind", **where)
    assert (await call("handoff_cancel", handoff=other["id"]))["state"] == "cancelled"

    assert call.called == TOOLS
    return call
