"""Every read path checks the key's ``read`` scope in the service layer; a write-only key still
writes (issue 13, finding 2)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from engram import LOCAL, Engram, PermissionDenied
from engram.accounts import AuditQuery, Scope
from engram.actors import Actor
from engram.lifecycle.feedback import FeedbackKind
from engram.mcp import Binding, build_server
from engram.models import MemoryPatch, NewMemory
from engram.service.feedback import give_feedback
from engram.store.sqlite import SQLiteStore
from tests import test_api_live
from tests.conftest import FakeClock
from tests.mcp_scenario import text_of
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

WRITER = Actor("local", "api", "key_w", frozenset({Scope.WRITE}))


def test_a_write_only_key_reads_nothing(engram: Engram) -> None:
    memory = engram.memories.add(NewMemory(content="the deploy runs on Fridays"), LOCAL)
    engram.soul.set_block("identity", LOCAL, "A careful assistant")
    snap = engram.soul.snapshot(LOCAL)
    reads: list[Callable[[], Any]] = [
        lambda: engram.memories.get(memory.id, WRITER),
        lambda: engram.memories.history(memory.id, WRITER),
        lambda: engram.memories.list_memories(WRITER),
        lambda: engram.search.search("deploy", WRITER),
        lambda: engram.context.assemble(WRITER, "deploy"),
        lambda: engram.soul.view(WRITER),
        lambda: engram.soul.layer(WRITER),
        lambda: engram.soul.history("identity", WRITER),
        lambda: engram.soul.diff("identity", WRITER),
        lambda: engram.soul.snapshots(WRITER),
        lambda: engram.soul.get_snapshot(snap.id, WRITER),
        lambda: engram.soul.diff_snapshot(snap.id, WRITER),
        lambda: engram.environments.list(WRITER),
        lambda: engram.lifecycle.reviews(WRITER),
        lambda: engram.audit.query(AuditQuery(), WRITER),
    ]
    for read in reads:
        with pytest.raises(PermissionDenied, match="'read' scope"):
            read()
    # writes that look a memory up first still work without the read scope
    updated = engram.memories.update(memory.id, MemoryPatch(pinned=True), WRITER)
    assert updated.pinned
    assert give_feedback(engram.memories, memory.id, FeedbackKind.HELPFUL, WRITER).memory
    engram.soul.set_block("identity", WRITER, "A terse assistant", environment="default")
    engram.memories.delete(memory.id, WRITER)


def test_rest_get_and_history_refuse_a_write_only_key(live: Live) -> None:
    with live.client(live.owner_token) as owner:
        fact = owner.post("/api/v1/facts", json={"content": "the staging host is blue"}).json()
        writer = owner.post("/api/v1/keys", json={"name": "w", "scopes": ["write"]}).json()
    with live.client(writer["token"]) as c:
        for path in (f"/api/v1/facts/{fact['id']}", f"/api/v1/facts/{fact['id']}/history"):
            r = c.get(path)
            assert r.status_code == 403, (path, r.text)
            assert "staging host" not in r.text
        r = c.patch(f"/api/v1/facts/{fact['id']}", json={"pinned": True})
        assert r.status_code == 200, r.text
        assert c.delete(f"/api/v1/facts/{fact['id']}").status_code == 200
        assert c.delete(f"/api/v1/facts/{fact['id']}").status_code == 200  # already deleted


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_get_and_history_refuse_a_write_only_key(
    tmp_path: Path, clock: FakeClock
) -> None:
    with Engram(SQLiteStore(tmp_path / "mcp.db"), clock=clock) as engram:
        memory = engram.memories.add(NewMemory(content="the staging host is blue"), LOCAL)
        server = build_server(Binding(engram, WRITER))
        async with Client(server, mode="auto") as c:  # type: ignore[arg-type]
            for tool in ("get_memory", "memory_history"):
                result = await c.call_tool(tool, {"memory_id": memory.id})
                assert result.is_error, tool
                assert "permission_denied" in text_of(result)
                assert "staging host" not in text_of(result)
