"""Work that runs once at a time across processes: the store's run_exclusive lock, and the
maintenance run that uses it (both backends)."""

from __future__ import annotations

import socket
import threading

import pytest

from engram import LOCAL, Conflict, Engram
from engram.accounts import AuditQuery
from engram.store import Store
from engram.store.sqlite import SQLiteStore


def test_a_held_name_is_refused_until_released(store: Store) -> None:
    with store.run_exclusive("job") as got:
        assert got
        seen: list[bool] = []

        def other() -> None:  # another thread: another connection, another holder
            with store.run_exclusive("job") as again, store.run_exclusive("other") as free:
                seen.extend([again, free])

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [False, True]
    with store.run_exclusive("job") as got:
        assert got


def test_maintenance_while_one_runs_is_refused(engram: Engram) -> None:
    env = engram.environments.ensure_default(LOCAL)
    with engram.store.run_exclusive(f"maintenance:{env.id}"):
        with pytest.raises(Conflict, match="already running"):
            engram.lifecycle.maintain(LOCAL)
        assert engram.lifecycle.maintain(LOCAL, dry_run=True).dry_run  # a dry run writes nothing
    engram.lifecycle.maintain(LOCAL)
    (run,) = engram.store.audit.query(AuditQuery(action="maintenance.run"))
    assert run.environment_id == env.id
    assert run.details["started_at"] <= run.details["finished_at"]


def test_sqlite_takes_over_a_lock_left_by_a_dead_process(store: Store) -> None:
    if not isinstance(store, SQLiteStore):
        pytest.skip("PostgreSQL releases advisory locks itself when a session ends")
    dead = f"{socket.gethostname()}:999999999:x"
    with store.db.tx() as conn:
        conn.execute("INSERT INTO run_locks (name, holder) VALUES ('job', ?)", (dead,))
    with store.run_exclusive("job") as got:
        assert got
