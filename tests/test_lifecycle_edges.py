"""The same lifecycle on every write: each edge (CLI, REST, SDK, MCP) merges a repeated fact and
says so, and stores as given when the caller opts out. Also the shared write path under them:
batches that see their own items, all-or-nothing, and the candidate index kept in step with
writes by other processes and by other paths of this one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client as McpClient

from engram import LOCAL, Engram, NewMemory
from engram.errors import InvalidInput
from engram.lifecycle import WriteAction
from engram.lifecycle.report import StoredMemory
from engram.mcp import Binding, build_server
from engram.models import MemoryFilter, MemoryPatch, Status
from engram.sdk import Client
from engram.service.fact_index import WARM_LOOKUPS, FactIndexes
from engram.store.sqlite import SQLiteStore
from tests import test_api_live
from tests.conftest import FakeClock
from tests.mcp_scenario import text_of
from tests.test_api_live import Live

live = test_api_live.live
PNPM = "The user prefers pnpm over npm for every project"


def _active(engram: Engram, env: str | None = None) -> list[str]:
    page = engram.memories.list_memories(LOCAL, MemoryFilter(), environment=env, limit=1000)
    return [m.content for m in page.items]


# -- CLI ---------------------------------------------------------------------------------------
def test_cli_add_twice_merges_and_exact_keeps_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from engram.cli import main

    home = ["--home", str(tmp_path / "h")]

    def run(*argv: str) -> str:
        assert main([*home, *argv]) == 0
        out, err = capsys.readouterr()
        return out + err

    run("init")
    first = run("add", PNPM)
    assert first.startswith("stored fact mem_")
    second = run("add", PNPM)
    assert second.startswith("merged into fact mem_") and "jaccard 1.00" in second
    data = json.loads(run("add", PNPM, "--json"))
    assert data["outcome"]["action"] == "merged" and data["reinforcement_count"] == 2
    assert run("add", PNPM, "--exact").startswith("stored fact mem_")
    listed = json.loads(run("list", "--json"))
    assert [m["content"] for m in listed["items"]] == [PNPM, PNPM]


# -- REST --------------------------------------------------------------------------------------
def test_rest_create_and_bulk_answer_the_outcome(live: Live) -> None:
    with live.client(live.owner_token) as c:
        first = c.post("/api/v1/facts", json={"content": PNPM}).raise_for_status().json()
        assert first["outcome"]["action"] == "created" and first["content"] == PNPM
        again = c.post("/api/v1/facts", json={"content": PNPM}).raise_for_status().json()
        # backward compatible: the memory's fields, the one that now holds the fact
        assert again["id"] == first["id"] and again["reinforcement_count"] == 1
        assert again["outcome"]["action"] == "merged"
        assert again["outcome"]["absorbed_into"] == first["id"]
        moved = c.post(
            "/api/v1/facts", json={"content": "Dana lives in Porto", "importance": 0.5}
        ).json()
        update = c.post("/api/v1/facts", json={"content": "Dana moved to Lisbon"}).json()
        assert update["outcome"] == {
            **update["outcome"],
            "action": "superseded",
            "superseded": moved["id"],
        }
        exact = c.post("/api/v1/facts", json={"content": PNPM, "lifecycle": False}).json()
        assert exact["outcome"]["action"] == "created" and exact["id"] != first["id"]
        bulk = c.post(
            "/api/v1/facts/bulk",
            json=[
                {"content": "Release day for kite-mobile is friday"},
                {"content": "Release day for kite-mobile is friday"},
                {"content": "Release day for kite-mobile is friday", "lifecycle": False},
            ],
        ).raise_for_status()
        actions = [m["outcome"]["action"] for m in bulk.json()]
        assert actions == ["created", "merged", "created"]
        assert bulk.json()[1]["outcome"]["absorbed_into"] == bulk.json()[0]["id"]
        episode = c.post("/api/v1/episodes", json={"content": "We met about the deploy"}).json()
        assert episode["outcome"]["action"] == "created"
    assert sorted(_active(live.engram)).count(PNPM) == 2


# -- SDK ---------------------------------------------------------------------------------------
def test_sdk_facts_add_returns_the_outcome(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        first = c.facts.add(NewMemory(content=PNPM))
        again = c.facts.add(NewMemory(content=PNPM))
        exact = c.facts.add(NewMemory(content=PNPM, lifecycle=False))
        many = c.facts.add_many([NewMemory(content=PNPM), NewMemory(content="Quite new")])
    assert isinstance(again, StoredMemory) and again.outcome.action is WriteAction.MERGED
    assert again.id == first.id and again.outcome.merged_record not in (None, first.id)
    assert exact.outcome.action is WriteAction.CREATED and exact.id != first.id
    assert [m.outcome.action for m in many] == [WriteAction.MERGED, WriteAction.CREATED]


# -- MCP ---------------------------------------------------------------------------------------
@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_mcp_remember_merges_and_opts_out(tmp_path: Path, clock: FakeClock) -> None:
    with Engram(SQLiteStore(tmp_path / "mcp.db"), clock=clock) as engram:
        server = build_server(Binding(engram, LOCAL, None))
        async with McpClient(server) as c:  # type: ignore[arg-type]
            first = json.loads(text_of(await c.call_tool("remember", {"content": PNPM})))
            again = json.loads(text_of(await c.call_tool("remember", {"content": PNPM})))
            exact = json.loads(
                text_of(await c.call_tool("remember", {"content": PNPM, "lifecycle": False}))
            )
        assert first["action"] == "created" and again["action"] == "merged"
        assert again["absorbed_into"] == first["memory"]["id"]
        assert exact["action"] == "created" and exact["memory"]["id"] != first["memory"]["id"]
        assert _active(engram).count(PNPM) == 2


# -- the write path under them, both backends ------------------------------------------------
def test_a_batch_sees_its_own_items(engram: Engram) -> None:
    out = engram.lifecycle.remember_many(
        [
            NewMemory(content="Omar lives in Porto"),
            NewMemory(content="Omar lives in Porto"),
            NewMemory(content="Omar moved to Lisbon"),
        ],
        LOCAL,
    )
    assert [o.action for o in out] == [
        WriteAction.CREATED,
        WriteAction.MERGED,
        WriteAction.SUPERSEDED,
    ]
    assert out[2].superseded == out[0].memory.id
    assert _active(engram) == ["Omar moved to Lisbon"]
    stamp = engram.store.memory_stamp()
    with pytest.raises(InvalidInput, match="at most 1000 memories"):
        engram.lifecycle.remember_many([NewMemory(content=f"n {i}") for i in range(1001)], LOCAL)
    assert engram.store.memory_stamp() == stamp and len(_active(engram)) == 1


def test_the_index_sees_other_processes_and_other_paths(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "shared.db"
    with Engram(SQLiteStore(path), clock=clock) as a, Engram(SQLiteStore(path), clock=clock) as b:
        # warm up a's candidate index, so that its lookups no longer reach the store
        for i in range(WARM_LOOKUPS + 2):
            a.lifecycle.remember(NewMemory(content=f"Warm fact number {i} about zebras"), LOCAL)
        # another process writes a fact; a must see it at once
        written = b.lifecycle.remember(NewMemory(content=PNPM), LOCAL)
        assert a.lifecycle.remember(NewMemory(content=PNPM), LOCAL).action is WriteAction.MERGED
        # an edit through another path of this process: the index must not keep the old text
        a.memories.update(written.memory.id, MemoryPatch(content="Keiko keeps bees"), LOCAL)
        again = a.lifecycle.remember(NewMemory(content="Keiko keeps bees"), LOCAL)
        assert again.action is WriteAction.MERGED and again.absorbed_into == written.memory.id
        deleted = a.memories.delete(written.memory.id, LOCAL)
        assert deleted.status is Status.DELETED
        fresh = a.lifecycle.remember(NewMemory(content="Keiko keeps bees"), LOCAL)
        assert fresh.action is WriteAction.CREATED


def test_a_batch_counts_one_lookup_per_fact_toward_building_the_index(
    tmp_path: Path, clock: FakeClock
) -> None:
    """A batch of many facts builds the candidate index before it, rather than sending each
    fact's lookup to the store's keyword search; a single write still waits for the warm-up."""
    with Engram(SQLiteStore(tmp_path / "e.db"), clock=clock) as engram:
        engram.memories.add_many(
            [NewMemory(content=f"Fact {i} about otters") for i in range(WARM_LOOKUPS)], LOCAL
        )
        env = engram.environments.resolve(None, LOCAL).id
        indexes = FactIndexes(engram.store)
        with indexes.lock:
            assert indexes.index(env) is None  # one lookup: not worth a build yet
            built = indexes.index(env, WARM_LOOKUPS)
        assert built is not None and len(built) == WARM_LOOKUPS
        # and the write path passes its batch size: the batch's facts see the index's
        out = engram.lifecycle.remember_many(
            [NewMemory(content=f"Fact {i} about otters") for i in range(WARM_LOOKUPS)], LOCAL
        )
        assert [o.action for o in out] == [WriteAction.MERGED] * WARM_LOOKUPS


def test_writes_from_another_process_do_not_keep_the_index_rebuilding(
    tmp_path: Path, clock: FakeClock
) -> None:
    """Two servers on one file, writing in turn: each write by one drops the other's index, so
    an index never repays its build; the builds back off (a handful, not one per warm-up) and
    dedup still sees the other's facts."""
    path = tmp_path / "shared.db"
    with (
        Engram(SQLiteStore(path), clock=clock) as a,
        Engram(SQLiteStore(path), clock=clock) as b,
    ):
        a.environments.ensure_default(LOCAL)
        for i in range(120):
            a.lifecycle.remember(NewMemory(content=f"Alpha fact {i} about herons"), LOCAL)
            b.lifecycle.remember(NewMemory(content=f"Beta fact {i} about cranes"), LOCAL)
        builds = b.lifecycle._writes._indexes.builds
        assert 1 <= builds <= 5, builds  # without the back-off: one per 8 lookups, ~13
        again = b.lifecycle.remember(NewMemory(content="Alpha fact 7 about herons"), LOCAL)
        assert again.action is WriteAction.MERGED
