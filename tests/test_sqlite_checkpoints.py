"""The SQLite write path: WAL checkpoints on a background thread (the log stays bounded, a
killed writer loses nothing it acknowledged), audit rows written beside each change, and
environment lookups that read through the writer's connection when it is idle."""

from __future__ import annotations

import gc
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.accounts import AuditQuery
from engram.errors import Conflict
from engram.lifecycle.changes import record as record_change
from engram.models import Action, MemoryFilter
from engram.store.sqlite import SQLiteStore, checkpoint
from tests.sql import query
from tests.test_crash import acknowledged_then_killed

FRAME = 4096 + 24  # a WAL frame: header and one page


def _checkpoint_threads() -> int:
    return sum(t.name == "engram-sqlite-checkpoint" for t in threading.enumerate())


def _wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_wal_stays_bounded_under_one_by_one_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "LOG_LIMIT", 200)
    monkeypatch.setattr(checkpoint, "CHANGES_PER_PASS", 40)
    db = tmp_path / "w.db"
    store = SQLiteStore(db)
    engram = Engram(store)
    ids = [
        engram.memories.add(NewMemory(content=f"stream item {i} zq{i}x"), LOCAL).id
        for i in range(600)
    ]
    # ~25 frames per memory: without checkpoints that restart it the log would hold ~15000
    wal_frames = (os.path.getsize(f"{db}-wal") - 32) / FRAME
    assert wal_frames < 3000
    # nothing lost, every row indexed and versioned
    assert engram.memories.list_memories(LOCAL, limit=1).total == 600
    assert len(store.get(ids)) == 600
    assert [h.memory_id for h in store.keyword_search("zq599x", MemoryFilter(), limit=5)] == [
        ids[-1]
    ]
    assert query(store, "SELECT count(*) FROM memory_versions") == [(600,)]
    assert query(store, "SELECT count(*) FROM memories_fts") == [(600,)]
    store.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 600
    conn.close()


def test_close_stops_the_checkpoint_thread(tmp_path: Path) -> None:
    before = _checkpoint_threads()
    store = SQLiteStore(tmp_path / "t.db")
    assert _checkpoint_threads() == before + 1
    store.close()
    assert _checkpoint_threads() == before
    store.close()  # a second close does nothing


def test_a_store_dropped_without_close_stops_its_thread(tmp_path: Path) -> None:
    before = _checkpoint_threads()
    store = SQLiteStore(tmp_path / "d.db")
    assert _checkpoint_threads() == before + 1
    del store
    gc.collect()
    assert _wait_for(lambda: _checkpoint_threads() == before)


def test_environment_lookups_while_a_write_holds_the_lock(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "e.db")
    env = Engram(store).environments.ensure_default(LOCAL)
    with store.db.tx_lock():  # the writer's connection is busy: lookups go through a reader
        assert store.find_environment(env.owner, env.name) == env
        assert store.get_environment(env.id) == env
        assert store.get_environment("env_missing") is None
    assert store.find_environment(env.owner, env.name) == env
    assert store.find_environment(env.owner, "missing") is None
    assert store.get_environment(env.id) == env
    store.close()


def test_memory_changes_are_audited_with_their_targets(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    engram = Engram(store)
    one = engram.memories.add(NewMemory(content="a single memory"), LOCAL)
    batch = engram.memories.add_many([NewMemory(content=f"batch {i}") for i in range(3)], LOCAL)
    [entry] = engram.audit.query(AuditQuery(target=one.id), LOCAL)
    assert (entry.action, entry.targets, entry.before, entry.after, entry.details) == (
        "memory.create",
        [one.id],
        {one.id: None},
        {one.id: 1},
        {},
    )
    for m in batch:
        [entry] = engram.audit.query(AuditQuery(target=m.id), LOCAL)
        assert entry.targets == [b.id for b in batch]
    assert query(store, "SELECT count(*) FROM audit_targets") == [(5,)]  # + the environment
    store.close()


def test_a_new_memory_that_reuses_a_stored_id_is_a_conflict(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    engram = Engram(store)
    m = engram.memories.add(NewMemory(content="the first words"), LOCAL)
    again = record_change(m.model_copy(update={"content": "other words"}), Action.CREATE, LOCAL)
    entries = len(engram.audit.query(AuditQuery(), LOCAL))
    entry = engram.audit.entry(LOCAL, "memory.create", targets=[m.id])
    with pytest.raises(Conflict):
        store.write([again], audit=[entry])
    # the whole transaction rolled back: row, version, index entry and audit entry
    assert engram.memories.get(m.id, LOCAL).content == "the first words"
    assert len(store.versions(m.id)) == 1
    assert store.keyword_search("other", MemoryFilter(), limit=5) == []
    assert len(engram.audit.query(AuditQuery(), LOCAL)) == entries
    store.close()


def test_sigkill_during_checkpoints_keeps_acknowledged_writes(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    # restart the log every few writes
    setup = "checkpoint.LOG_LIMIT = 150; checkpoint.CHANGES_PER_PASS = 30"
    acknowledged = acknowledged_then_killed(db, 400, setup)

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = SQLiteStore(db)
    assert {m.id for m in store.get(acknowledged)} == set(acknowledged)
    assert all(len(store.versions(i)) == 1 for i in acknowledged[-20:])
    assert query(store, "SELECT count(*) FROM memories_fts") == query(
        store, "SELECT count(*) FROM memories"
    )
    store.close()
