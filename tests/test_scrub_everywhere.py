"""Secrets are never stored: fake secrets of every kind, planted through every interface (REST,
SDK, MCP, CLI, the Python service API, extraction, conversations, the Soul), are absent from the
database afterwards: from the raw bytes of ``engram.db``, ``-wal`` and ``-shm`` on SQLite, from
every row of every table on PostgreSQL. Each write's result and its audit entry say how many
secrets of each kind were removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient

from engram import LOCAL, Engram
from engram.accounts import AuditQuery
from engram.extraction.conversation import NewMessage, Speaker
from engram.mcp import Binding, build_server
from engram.models import EpisodeDetails, Layer, MemoryPatch, NewMemory, ProcedureDetails
from engram.sdk import Client
from engram.store.sqlite import SQLiteStore
from tests import test_api_live
from tests.scrub_fixtures import fakes, planted_text
from tests.sql import backend, query
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture
API = "/api/v1"


class Planter:
    """Fresh planted text for each write, remembering every tail to search for later."""

    def __init__(self) -> None:
        self.tails: dict[str, str] = {}  # tail -> where it was planted

    def text(self, where: str) -> str:
        text, tails = planted_text()
        self.tails.update(dict.fromkeys(tails, where))
        return text

    def one(self, where: str, kind: str) -> str:
        fake = next(f for f in fakes() if f.kind == kind)
        self.tails[fake.tail] = where
        return fake.text

    def leaks(self, haystack: bytes) -> list[str]:
        low = haystack.lower()
        return sorted(
            f"{where}: {tail}" for tail, where in self.tails.items() if tail.lower().encode() in low
        )


def sqlite_bytes(db: Path) -> bytes:
    return b"".join(
        p.read_bytes() for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")) if p.exists()
    )


def every_row(engram: Engram) -> bytes:
    """Every row of every table, as text (PostgreSQL)."""
    tables = query(
        engram.store,
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    )
    return "\n".join(
        str(row)
        for (name,) in tables
        for row in query(engram.store, f'SELECT t::text FROM "{name}" t')
    ).encode()


def memory_fields(p: Planter, where: str) -> dict[str, Any]:
    """Secrets in every free-text field of a memory."""
    return {
        "content": p.text(where),
        "tags": [
            p.one(where, "github_token").split()[-1],
            p.one(where, "aws_access_key_id").split()[-1],
        ],
        "metadata": {"env": {"deep": [p.one(where, "slack_token")]}, "key": p.one(where, "jwt")},
        "author": p.one(where, "api_key").split()[-1],
        "keyword_context": p.one(where, "bearer_token"),
    }


def rest_writes(live: Live, p: Planter) -> None:
    with live.client(live.owner_token) as c:
        fact = c.post(f"{API}/facts", json=memory_fields(p, "rest facts"))
        assert fact.status_code == 201, fact.text
        body = fact.json()
        assert body["redactions"]["github_token"] >= 2 and "[REDACTED:" in body["content"]
        fact_id = body["id"]
        ep = {
            "content": p.text("rest episodes"),
            "episode": {
                "key_decisions": [p.one("rest episodes", "stripe_key")],
                "open_questions": [p.one("rest episodes", "url_credentials")],
                "participants": [p.one("rest episodes", "google_api_key")],
                "agent": p.one("rest episodes", "npm_token"),
            },
        }
        assert c.post(f"{API}/episodes", json=ep).status_code == 201
        proc = {
            "content": p.text("rest procedures"),
            "procedure": {
                "name": "deploy " + p.one("rest procedures", "gitlab_token"),
                "trigger": p.one("rest procedures", "secret_assignment"),
                "steps": [
                    p.one("rest procedures", "private_key"),
                    p.one("rest procedures", "cookie"),
                ],
            },
        }
        assert c.post(f"{API}/procedures", json=proc).status_code == 201
        bulk = [{"content": p.text("rest bulk")}, {"content": p.text("rest bulk")}]
        r = c.post(f"{API}/facts/bulk", json=bulk)
        assert r.status_code == 201 and all(m["redactions"] for m in r.json())
        patch = c.patch(
            f"{API}/facts/{fact_id}",
            params={"reason": p.one("rest patch reason", "auth_header")},
            json={"content": p.text("rest patch"), "metadata": {"x": p.one("rest patch", "jwt")}},
        )
        assert patch.status_code == 200 and patch.json()["redactions"]
        bulk_patch = {"items": [{"id": fact_id, "patch": {"content": p.text("rest bulk patch")}}]}
        assert c.patch(f"{API}/facts/bulk", json=bulk_patch).status_code == 200
        rem = c.post(f"{API}/memories/remember", json={"content": p.text("rest remember")})
        assert rem.status_code == 201 and rem.json()["redactions"]["private"] == 1
        msgs = [{"role": "user", "content": p.text("rest extract")}]
        ext = c.post(
            f"{API}/extract",
            json={
                "messages": msgs,
                "conversation": {"title": p.one("rest extract title", "api_key")},
            },
        )
        assert ext.status_code == 200 and ext.json()["redactions"]
        add = c.post(
            f"{API}/conversations/chat-1/messages",
            json={
                "messages": [
                    {"role": "user", "content": p.text("rest messages")},
                    {"role": "assistant", "content": p.text("rest messages"), "author": "bot"},
                ],
                "title": p.one("rest messages title", "slack_token"),
            },
        )
        assert add.status_code == 200 and add.json()["redactions"]
        block = c.put(f"{API}/soul/blocks/rules", json={"text": p.text("rest soul")})
        assert block.status_code == 200, block.text
        assert "[REDACTED:" in block.json()["text"]
        audit = c.get(f"{API}/audit", params={"action": "memory.create", "limit": 100}).json()
        assert any(e["details"].get("redactions", {}).get("github_token") for e in audit)


def sdk_writes(live: Live, p: Planter) -> None:
    with Client(live.url, live.owner_token) as c:
        fact = c.facts.add(NewMemory(content=p.text("sdk add")))
        assert fact.redactions and "[REDACTED:" in fact.content
        c.facts.update(fact.id, MemoryPatch(content=p.text("sdk update")))
        c.procedures.add(
            NewMemory(
                layer=Layer.PROCEDURE,
                content=p.text("sdk procedure"),
                procedure=ProcedureDetails(name="x", steps=[p.one("sdk procedure", "jwt")]),
            )
        )


async def mcp_writes(engram: Engram, p: Planter) -> None:
    async with McpClient(build_server(Binding(engram, LOCAL, None))) as c:  # type: ignore[arg-type]
        calls: list[tuple[str, dict[str, Any]]] = [
            ("remember", {"content": p.text("mcp remember"), "tags": ["t"]}),
            (
                "create_episode",
                {
                    "summary": p.text("mcp episode"),
                    "key_decisions": [p.one("mcp episode", "slack_token")],
                },
            ),
            (
                "create_procedure",
                {
                    "name": "p",
                    "description": p.text("mcp procedure"),
                    "steps": [p.one("mcp procedure", "bearer_token")],  # steps are short
                },
            ),
            (
                "extract_memories",
                {"messages": [{"role": "user", "content": p.text("mcp extract")}]},
            ),
            ("soul_update_block", {"block": "current_focus", "text": p.text("mcp soul")}),
        ]
        for name, args in calls:
            result = await c.call_tool(name, args)
            assert not result.is_error, (name, result)
        remembered = await c.call_tool("remember", {"content": p.text("mcp remember 2")})
        assert remembered.structured_content is not None
        assert remembered.structured_content["redactions"]["private"] == 1
        fact_id = remembered.structured_content["memory"]["id"]
        updated = await c.call_tool(
            "update_memory", {"memory_id": fact_id, "content": p.text("mcp update")}
        )
        assert not updated.is_error


def cli_writes(home: Path, p: Planter, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engram.cli import main

    assert main(["--home", str(home), "add", p.text("cli add"), "--tag", "x", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["redactions"]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": p.text("cli extract")}]))
    assert main(["--home", str(home), "extract", str(chat)]) == 0
    capsys.readouterr()


def service_writes(engram: Engram, p: Planter) -> None:
    m = engram.memories.add(NewMemory(content=p.text("service add")), LOCAL)
    engram.memories.update(m.id, MemoryPatch(content=p.text("service update")), LOCAL)
    engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content=p.text("service episode"),
            # an episode's items are short (200 characters): one secret each
            episode=EpisodeDetails(
                open_questions=[p.one("service episode", "github_token")],
                key_decisions=[p.one("service episode", "aws_access_key_id")],
            ),
        ),
        LOCAL,
    )
    engram.lifecycle.remember(NewMemory(content=p.text("service remember")), LOCAL)
    engram.extraction.add_messages(
        "svc-chat",
        [NewMessage(role=Speaker.USER, content=p.text("service messages"))],
        LOCAL,
        title=p.one("service title", "jwt"),
    )
    engram.soul.set_block("user_profile", LOCAL, p.text("service soul"))


@pytest.mark.anyio
async def test_no_planted_secret_reaches_the_sqlite_files(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = Planter()
    rest_writes(live, p)
    sdk_writes(live, p)
    await mcp_writes(live.engram, p)
    cli_writes(live.home, p, tmp_path, capsys)
    service_writes(live.engram, p)
    assert len(p.tails) > 500
    raw = backend(live.engram.store)
    assert isinstance(raw, SQLiteStore)
    # the writes did land: the markers are on disk
    assert b"[REDACTED:github_token]" in sqlite_bytes(raw.path)
    live.engram.close()
    assert p.leaks(sqlite_bytes(raw.path)) == []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_no_planted_secret_in_any_row(engram: Engram) -> None:
    """Both backends: the service API and MCP, then every row of every table."""
    p = Planter()
    service_writes(engram, p)
    await mcp_writes(engram, p)
    raw = backend(engram.store)
    if isinstance(raw, SQLiteStore):
        engram.close()
        assert p.leaks(sqlite_bytes(raw.path)) == []
    else:
        dump = every_row(engram)
        assert b"[REDACTED:" in dump
        assert p.leaks(dump) == []


def test_the_audit_entry_counts_what_was_removed(engram: Engram) -> None:
    p = Planter()
    m = engram.memories.add(NewMemory(content=p.one("a", "github_token")), LOCAL)
    assert m.redactions == {"github_token": 1}
    (entry,) = engram.audit.query(AuditQuery(action="memory.create"), LOCAL)
    assert entry.details["redactions"] == {"github_token": 1}
    out = engram.lifecycle.remember(NewMemory(content=p.one("b", "private")), LOCAL)
    assert out.redactions == {"private": 1} and out.memory.redactions == {"private": 1}
    entries = engram.audit.query(AuditQuery(action="memory.create"), LOCAL)
    assert entries[0].details["redactions"] == {"private": 1}
    # a read shows no redactions: the count belongs to the write
    assert engram.memories.get(m.id, LOCAL).redactions == {}
    assert engram.memories.history(m.id, LOCAL)[0].snapshot.redactions == {"github_token": 1}


def test_a_path_that_forgets_to_scrub_is_caught_by_the_store(engram: Engram) -> None:
    """A new code path writing straight to ``engram.store`` still stores no secret."""
    from engram.lifecycle import changes

    p = Planter()
    env = engram.environments.resolve(None, LOCAL)
    raw = NewMemory(content=p.one("direct", "slack_token"))
    memory = changes.build(env.id, raw, LOCAL, engram.clock())
    entry = engram.audit.entry(LOCAL, "memory.create", environment_id=env.id, targets=[memory.id])
    engram.store.write([changes.record(memory, changes.Action.CREATE, LOCAL)], audit=[entry])
    (stored,) = engram.store.get([memory.id])
    assert "[REDACTED:slack_token]" in stored.content
    assert engram.memories.history(memory.id, LOCAL)[0].snapshot.redactions == {"slack_token": 1}
    (logged,) = engram.audit.query(AuditQuery(action="memory.create"), LOCAL)
    assert logged.details["redactions"] == {"slack_token": 1}
