"""Errors name what is wrong in plain words, worded once for every edge: no enum reprs and no
pydantic 'Value error,' prefix in REST, MCP or dashboard messages, a value echoed as typed, a
memory under another layer's path named as what it is, and an MCP tool's refusal as the tool
said it (walkthrough 32, finding 16)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mcp import Client

from engram import LOCAL, Engram, NewMemory
from engram.actors import Actor
from engram.api import ServerSettings
from engram.mcp import Binding, build_server
from engram.servers import http_app
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock
from tests.mcp_scenario import text_of

PASSWORD = "a long password"


@pytest.fixture
def engram(tmp_path: Path, clock: FakeClock) -> Engram:
    return Engram(SQLiteStore(tmp_path / "engram.db"), clock=clock)


def test_validation_text_is_plain() -> None:
    from engram.errors import validation_text  # the one wording every edge uses

    assert validation_text("Input should be <Layer.FACT: 'fact'>") == "Input should be 'fact'"
    assert (
        validation_text("Input should be <Layer.FACT: 'fact'> or <Layer.EPISODE: 'episode'>")
        == "Input should be 'fact' or 'episode'"
    )
    assert validation_text("Value error, content must not be empty") == (
        "content must not be empty"
    )


def test_rest_errors_are_plain(engram: Engram) -> None:
    ann = engram.accounts.create_user("ann", LOCAL)
    token = engram.accounts.issue_key(LOCAL, "t", user_id=ann.id).token
    client = TestClient(
        http_app(engram, ServerSettings()),
        base_url="http://127.0.0.1",
        headers={"Authorization": f"Bearer {token}"},
    )
    wrong = client.post("/api/v1/facts", json={"content": "x", "layer": "episode"})
    assert wrong.status_code == 422
    error = wrong.json()["error"]
    assert error["message"] == "body.layer: Input should be 'fact'", error
    assert "<" not in str(error["details"])
    category = client.post("/api/v1/facts", json={"content": "x", "category": "Bad Category!"})
    message = category.json()["error"]["message"]
    assert message.startswith("body.category: category 'Bad Category!' must be"), message
    # walkthrough 34: search and context take the environment in the body, a write in the
    # query: the refusal says where it goes
    placed = client.post("/api/v1/facts", json={"content": "x", "environment": "shop"})
    assert placed.status_code == 422
    assert placed.json()["error"]["message"] == (
        "body.environment: Extra inputs are not permitted; name the environment in the query: "
        "?environment=NAME"
    )
    bare = client.post("/api/v1/search", content=b'{"query": "x"}')  # curl -d, no Content-Type
    assert "Content-Type: application/json" in bare.json()["error"]["message"], bare.text
    fact = engram.memories.add(NewMemory(content="a fact, not a procedure"), Actor(ann.id))
    misplaced = client.post(f"/api/v1/procedures/{fact.id}/success")
    assert misplaced.status_code == 404
    assert misplaced.json()["error"]["message"] == (
        f"memory {fact.id!r} is a fact, not a procedure (it is at /api/v1/facts/{fact.id})"
    )


def _csrf(text: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', text)
    assert found, text
    return found.group(1)


@pytest.mark.slow
def test_dashboard_errors_are_plain(engram: Engram) -> None:
    engram.accounts.create_user("ann", LOCAL, password=PASSWORD, is_admin=True)
    client = TestClient(http_app(engram, ServerSettings()), base_url="http://127.0.0.1")
    page = client.get("/ui/login")
    form = {"name": "ann", "password": PASSWORD, "csrf": _csrf(page.text)}
    assert client.post("/ui/login", data=form, follow_redirects=False).status_code == 303
    csrf = _csrf(client.get("/ui/memories").text)

    def error_of(response_text: str) -> str:
        return html.unescape(re.sub(r"<[^>]+>", " ", response_text))

    empty = client.post("/ui/memories", data={"content": " ", "csrf": csrf})
    assert empty.status_code == 422
    shown = error_of(empty.text)
    assert "content: content must not be empty" in shown and "Value error" not in shown
    bad = client.post(
        "/ui/memories", data={"content": "x", "category": "Bad Category!", "csrf": csrf}
    )
    shown = error_of(bad.text)
    assert "category: category 'Bad Category!' must be" in shown and "Value error" not in shown
    small = client.get("/ui/context", params={"run": 1, "q": "x", "max_tokens": 10})
    assert small.status_code == 422
    assert "check the form: max_tokens: Input should be greater than or equal to 64" in (
        error_of(small.text)
    )
    # an error page leads back to the page it came from, not always to the memories
    assert 'href="/ui/context">Back to context</a>' in small.text
    revoked = client.post("/ui/keys/key_nope/revoke", data={"csrf": csrf})
    assert revoked.status_code == 404 and 'href="/ui/keys">Back to keys</a>' in revoked.text
    assert 'href="/ui/memories">Back to memories</a>' in empty.text


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_mcp_tools_refusal_reads_as_the_tool_said_it(engram: Engram) -> None:
    server = build_server(Binding(engram, LOCAL))
    async with Client(server, mode="auto") as c:  # type: ignore[arg-type]
        missing = await c.call_tool("get_memory", {"memory_id": "mem_x"})
        invalid = await c.call_tool("remember", {"content": "   "})
    for result, start in (
        (missing, "not_found: memory 'mem_x' does not exist"),
        (invalid, "invalid_input: content: content must not be empty"),
    ):
        assert result.is_error and text_of(result).startswith(start), text_of(result)


def test_the_dashboard_names_a_shared_environment_by_its_owner(engram: Engram) -> None:
    """Walkthrough 34: the switcher showed 'shop (owner)' and 'shop (writer)' side by side,
    titles said 'Memories in shop' for either, and members were listed as usr_… ids."""
    from engram.accounts import Role

    bob = engram.accounts.create_user("bob", LOCAL)
    ann = engram.accounts.create_user("ann", LOCAL, password=PASSWORD)
    engram.environments.create("shop", Actor(ann.id))
    theirs = engram.environments.create("shop", Actor(bob.id))
    engram.environments.share(theirs.id, ann.id, Role.WRITER, Actor(bob.id))
    client = TestClient(http_app(engram, ServerSettings()), base_url="http://127.0.0.1")
    page = client.get("/ui/login")
    form = {"name": "ann", "password": PASSWORD, "csrf": _csrf(page.text)}
    assert client.post("/ui/login", data=form, follow_redirects=False).status_code == 303
    csrf = _csrf(client.get("/ui/memories").text)
    switch = {"environment": theirs.id, "csrf": csrf}
    client.post("/ui/environments/switch", data=switch, follow_redirects=False)
    text = html.unescape(re.sub(r"<[^>]+>", " ", client.get("/ui/environments").text))
    assert "bob/shop (writer)" in text and "shop (owner)" in text
    assert "Members of bob/shop" in text and "bob " in text and "ann " in text
    memories = html.unescape(re.sub(r"<[^>]+>", " ", client.get("/ui/memories").text))
    assert "Memories  in bob/shop" in memories or "Memories in bob/shop" in memories
    # unshared: the next page says so, once, and shows her own (before: silently the default)
    engram.environments.unshare(theirs.id, ann.id, Actor(bob.id))
    after = html.unescape(re.sub(r"<[^>]+>", " ", client.get("/ui/memories").text))
    assert "You no longer have access to the environment you were in" in after
    assert "no longer have access" not in client.get("/ui/memories").text
