"""Handoffs through every edge, on both backends: a real uvicorn server (REST, the SDK), the
official MCP client, the CLI. Concurrent accepts over HTTP: exactly one 200, every other a
409 naming who has it. Ownership across users: another user — even a writer in the same
project — cannot list, read, claim or cancel a handoff (unless it is addressed to them)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mcp import Client as McpClient

from engram import LOCAL, Engram
from engram.accounts import Role, Scope
from engram.actors import Actor
from engram.api import ServerSettings, create_app
from engram.cli import main
from engram.errors import Conflict, NotFound
from engram.mcp import Binding, build_server
from engram.sdk import Client
from tests.live_server import running
from tests.mcp_scenario import text_of

V1 = "/api/v1/handoffs"


@dataclass
class Users:
    url: str
    engram: Engram
    env: str
    alice: Actor
    bob: Actor
    carol: Actor
    tokens: dict[str, str]

    def http(self, who: str) -> httpx.Client:
        auth = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.Client(base_url=self.url, headers=auth, timeout=60)


@pytest.fixture
def users(engram: Engram) -> Iterator[Users]:
    """Alice owns a project shared with Bob (a writer); Carol has no role in it."""
    actors = {}
    tokens = {}
    for name in ("alice", "bob", "carol"):
        user = engram.accounts.create_user(name, LOCAL)
        actors[name] = Actor(user.id, "api")
        issued = engram.accounts.issue_key(LOCAL, name, [Scope.READ, Scope.WRITE], user_id=user.id)
        tokens[name] = issued.token
    env = engram.environments.create("webapp", actors["alice"]).id
    engram.environments.share(env, actors["bob"].user_id, Role.WRITER, actors["alice"])
    with running(lambda port: create_app(engram, ServerSettings(port=port))) as url:
        yield Users(url, engram, env, actors["alice"], actors["bob"], actors["carol"], tokens)


def race(users: Users, hid: str, threads: int) -> list[httpx.Response]:
    """``threads`` accepts of one handoff over HTTP, released at once."""
    barrier = threading.Barrier(threads)
    answers: list[httpx.Response] = []

    def claim(i: int) -> None:
        with users.http("alice") as c:
            barrier.wait()
            answers.append(c.post(f"{V1}/{hid}/accept", json={"agent": f"agent-{i}"}))

    pool = [threading.Thread(target=claim, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    return answers


def test_concurrent_accepts_over_http_exactly_one_wins(users: Users) -> None:
    threads, rounds = 6, 8
    with users.http("alice") as alice:
        for r in range(rounds):
            made = alice.post(V1, json={"summary": f"round {r}", "environment": users.env})
            assert made.status_code == 201, made.text
            answers = race(users, made.json()["id"], threads)
            codes = sorted(a.status_code for a in answers)
            assert codes == [200] + [409] * (threads - 1), (r, [a.text for a in answers])
            winner = next(a for a in answers if a.status_code == 200).json()["accepted_agent"]
            for lost in (a for a in answers if a.status_code == 409):
                error = lost.json()["error"]
                assert error["code"] == "conflict"
                assert f"already accepted by alice in {winner} at " in error["message"]


def test_ownership_over_rest(users: Users) -> None:
    with users.http("alice") as alice, users.http("bob") as bob, users.http("carol") as carol:
        private = alice.post(V1, json={"summary": "alice only", "environment": users.env}).json()
        for_bob = alice.post(
            V1, json={"summary": "for bob", "environment": users.env, "for_user": "bob"}
        ).json()
        assert {h["id"] for h in alice.get(V1).json()} == {private["id"], for_bob["id"]}
        # Bob writes in the project, yet sees only what is addressed to him
        assert [h["id"] for h in bob.get(V1).json()] == [for_bob["id"]]
        assert [h["id"] for h in bob.get(V1, params={"environment": users.env}).json()] == [
            for_bob["id"]
        ]
        assert carol.get(V1).json() == []
        for who in (bob, carol):
            assert who.get(f"{V1}/{private['id']}").status_code == 404
            assert who.post(f"{V1}/{private['id']}/accept", json={}).status_code == 404
            assert who.post(f"{V1}/{private['id']}/cancel").status_code == 404
        assert carol.get(f"{V1}/{for_bob['id']}").status_code == 404
        # Carol cannot leave one in a project she has no role in
        refused = carol.post(V1, json={"summary": "x", "environment": users.env})
        assert refused.status_code == 404
        assert bob.post(f"{V1}/{for_bob['id']}/cancel").status_code == 403
        taken = bob.post(f"{V1}/{for_bob['id']}/accept", json={"agent": "codex"})
        assert taken.status_code == 200 and taken.json()["accepted_by"] == users.bob.user_id
        assert alice.get(f"{V1}/{private['id']}").json()["state"] == "open"
        bad = alice.post(V1, json={"summary": "", "environment": users.env})
        assert bad.status_code == 422 and "summary" in bad.text
        assert bob.get(V1, params={"state": "done"}).status_code == 422
    spec = httpx.get(f"{users.url}/openapi.json", timeout=60).json()
    accept = spec["paths"][f"{V1}/{{handoff_id}}/accept"]["post"]
    assert "exactly one accept succeeds" in accept["summary"]
    assert "409" in accept["responses"]
    fields = spec["components"]["schemas"]["Handoff"]["properties"]
    assert "only they" in fields["owner"]["description"]


def test_the_sdk(users: Users) -> None:
    with Client(users.url, users.tokens["alice"]) as alice:
        h = alice.handoffs.begin("from the sdk", environment=users.env, next_steps=["ship it"])
        assert alice.handoffs.get(h.id).next_steps == ["ship it"]
        assert [x.id for x in alice.handoffs.list(environment=users.env)] == [h.id]
        assert alice.handoffs.accept(h.id, agent="sdk").accepted_agent == "sdk"
        with pytest.raises(Conflict, match="already accepted by alice in sdk"):
            alice.handoffs.accept(h.id)
        assert [x.id for x in alice.handoffs.list(states=["accepted"])] == [h.id]
        other = alice.handoffs.begin("withdrawn", environment=users.env)
        assert alice.handoffs.cancel(other.id).state == "cancelled"
    with Client(users.url, users.tokens["bob"]) as bob, pytest.raises(NotFound):
        bob.handoffs.get(h.id)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_ownership_over_mcp(users: Users) -> None:
    private = users.engram.handoffs.begin("alice only", users.alice, environment=users.env)
    addressed = users.engram.handoffs.begin(
        "for bob", users.alice, environment=users.env, for_user="bob"
    )
    bob = users.engram.accounts.authenticate(users.tokens["bob"], "mcp")
    async with McpClient(build_server(Binding(users.engram, bob)), mode="auto") as c:
        listed = await c.call_tool("handoff_list", {})
        assert [h["id"] for h in listed.structured_content["handoffs"]] == [addressed.id]
        assert "alice only" not in text_of(listed)
        for tool in ("handoff_accept", "handoff_cancel"):
            refused = await c.call_tool(tool, {"handoff": private.id})
            assert refused.is_error and "not_found: handoff" in text_of(refused)
        left = await c.call_tool("handoff_begin", {"summary": "x", "environment": users.env})
        assert not left.is_error  # a writer may leave one there (owned by Bob)
        taken = await c.call_tool("handoff_accept", {"handoff": addressed.id, "agent": "codex"})
        assert not taken.is_error and taken.structured_content["accepted_agent"] == "codex"
        again = await c.call_tool("handoff_accept", {"handoff": addressed.id})
        assert again.is_error and "already accepted by bob in codex" in text_of(again)
    assert users.engram.handoffs.get(private.id, users.alice).state == "open"


def test_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    home = str(tmp_path / "cli-home")
    assert main(["--home", home, "init"]) == 0
    capsys.readouterr()
    argv = ["--home", home, "handoff"]
    code = main([*argv, "begin", "Half done", "--next", "write the tests", "--file", "a.py"])
    out = capsys.readouterr().out.strip()
    assert code == 0 and out.startswith("hof_")
    assert main([*argv, "list", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["id"] == out and listed["next_steps"] == ["write the tests"]
    assert main([*argv, "accept", out, "--agent", "codex"]) == 0
    shown = capsys.readouterr().out
    assert "Half done" in shown and "- write the tests" in shown and "accepted by codex" in shown
    assert main([*argv, "accept", out]) == 1
    assert "error: handoff " in capsys.readouterr().err
    assert main([*argv, "show", "hof_nope"]) == 3
