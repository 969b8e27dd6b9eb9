"""Group commit on both stores (engram.store.group_commit): writes queued while a group commits
go in the next group, one transaction, and a failing write in a group fails alone."""

from __future__ import annotations

import threading
import time

import pytest

from engram.errors import Conflict
from engram.store import Store
from tests.test_store_contract import _change, _env, _memory

WRITERS = 6


def _queued(store: Store) -> int:
    group = store._group  # type: ignore[attr-defined]
    with group._queue_lock:
        return len(group._queue)


def _write_held(store: Store, ids: list[str]) -> dict[str, BaseException | None]:
    """Write each id from its own thread while the group's leader is held, so that all of them
    queue and the first thread to get the leader commits them as one group."""
    results: dict[str, BaseException | None] = {}

    def write(mid: str) -> None:
        try:
            store.write([_change(_memory(mid, f"note {mid}"))])
            results[mid] = None
        except BaseException as exc:
            results[mid] = exc

    threads = [threading.Thread(target=write, args=(mid,)) for mid in ids]
    with store._group._leader():  # type: ignore[attr-defined]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while _queued(store) < len(ids):
            assert time.monotonic() < deadline, "the writers did not queue"
            time.sleep(0.01)
    for t in threads:
        t.join(timeout=60)
    return results


def test_queued_writes_commit_as_one_group(store: Store) -> None:
    _env(store)
    before = store.memory_stamp()
    ids = [f"m{i}" for i in range(WRITERS)]
    results = _write_held(store, ids)
    assert results == dict.fromkeys(ids)
    assert [m.id for m in store.get(ids)] == ids
    assert store.memory_stamp() == before + WRITERS  # one step per write, grouped or not


@pytest.mark.parametrize("bad", [0, WRITERS - 1])
def test_a_failing_write_in_a_group_fails_alone(store: Store, bad: int) -> None:
    _env(store)
    store.write([_change(_memory("taken", "stored before"))])
    before = store.memory_stamp()
    ids = [f"m{i}" for i in range(WRITERS)]
    ids[bad] = "taken"  # created again: clashes with the stored version 1
    results = _write_held(store, ids)
    assert isinstance(results.pop("taken"), Conflict)
    assert results == {mid: None for mid in ids if mid != "taken"}
    stored = store.get(ids)
    assert {m.id for m in stored} == set(ids)
    assert next(m for m in stored if m.id == "taken").content == "stored before"
    assert store.memory_stamp() == before + WRITERS - 1
    assert [v.version for v in store.versions("taken")] == [1]
