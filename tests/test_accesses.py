"""Reads are counted off the request's path (engram.service.accesses): a search or an assembly
never waits for the store's write lock, and the reads of a moment share one write."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.service.accesses import AccessRecorder
from engram.store import Store
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock


def _counts(engram: Engram) -> dict[str, int]:
    return {m.content: m.access_count for m in engram.memories.list_memories(LOCAL).items}


def test_a_search_and_an_assembly_do_not_wait_for_a_write(tmp_path: Path, clock: FakeClock) -> None:
    store = SQLiteStore(tmp_path / "e.db")
    with Engram(store, clock=clock) as engram:
        engram.memories.add(NewMemory(content="The VPN config is in 1Password"), LOCAL)
        held, release = threading.Event(), threading.Event()

        def writer() -> None:  # a long write: holds SQLite's one writer
            with store.db.tx_lock():
                held.set()
                release.wait(30)

        thread = threading.Thread(target=writer)
        thread.start()
        assert held.wait(5)
        done = threading.Event()

        def reader() -> None:
            engram.search.search("VPN config", LOCAL)
            engram.context.assemble(LOCAL, "VPN config")
            done.set()

        threading.Thread(target=reader, daemon=True).start()
        try:
            # before, counting the reads took the write lock inside the request: blocked
            assert done.wait(10), "the read waited for the write lock"
            assert _counts(engram) == {"The VPN config is in 1Password": 0}  # not yet written
        finally:
            release.set()
            thread.join()
        engram.accesses.flush()
        assert _counts(engram) == {"The VPN config is in 1Password": 2}


def test_reads_of_a_moment_share_one_write(engram: Engram, clock: FakeClock) -> None:
    a = engram.memories.add(NewMemory(content="alpha"), LOCAL)
    b = engram.memories.add(NewMemory(content="beta"), LOCAL)
    recorder = AccessRecorder(engram.store, delay=60)  # the thread would wait a minute
    first = clock()
    recorder.record([a.id, b.id], first)
    clock.advance(minutes=5)
    later = clock()
    recorder.record([a.id], later)
    recorder.record([a.id, a.id], first)  # listed twice: read twice; an earlier time
    recorder.flush()
    assert recorder.writes == 1
    got = {m.id: m for m in engram.store.get([a.id, b.id])}
    assert (got[a.id].access_count, got[b.id].access_count) == (4, 1)
    assert got[a.id].last_accessed_at == later and got[b.id].last_accessed_at == first
    recorder.flush()  # nothing pending: no write
    assert recorder.writes == 1
    recorder.close()


def test_the_thread_writes_on_its_own_and_close_writes_the_rest(
    engram: Engram, clock: FakeClock
) -> None:
    a = engram.memories.add(NewMemory(content="alpha"), LOCAL)
    recorder = AccessRecorder(engram.store, delay=0.05)
    recorder.record([a.id], clock())
    deadline = time.monotonic() + 10
    while engram.store.get([a.id])[0].access_count == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert engram.store.get([a.id])[0].access_count == 1
    slow = AccessRecorder(engram.store, delay=60)
    slow.record([a.id], clock())
    slow.close()  # does not wait the minute: writes what is pending and stops
    assert engram.store.get([a.id])[0].access_count == 2
    slow.record([a.id], clock())  # after close: written at once
    assert engram.store.get([a.id])[0].access_count == 3
    recorder.close()


def test_pending_reads_are_bounded(engram: Engram, clock: FakeClock) -> None:
    a = engram.memories.add(NewMemory(content="alpha"), LOCAL)
    recorder = AccessRecorder(engram.store, delay=60, max_pending=3)
    recorder.record([a.id, a.id], clock())
    assert recorder.writes == 0
    recorder.record([a.id], clock())  # the third: written by the read that reached the bound
    assert recorder.writes == 1 and engram.store.get([a.id])[0].access_count == 3
    recorder.close()


def test_a_count_that_cannot_be_written_never_fails_the_read(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store: Store = SQLiteStore(tmp_path / "e.db")
    recorder = AccessRecorder(store, delay=60)
    recorder.record(["mem_gone"], clock())
    store.close()
    recorder.close()  # the write fails: logged, not raised
    assert "1 access counts not recorded" in caplog.text


def test_a_read_when_no_thread_can_start_is_written_at_once(
    engram: Engram, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At interpreter shutdown (or out of threads) Thread.start raises: the read is counted
    in the caller's thread and a later read tries a thread again. Before, the search failed
    with the RuntimeError and every later read waited for a thread that was never running."""
    a = engram.memories.add(NewMemory(content="alpha"), LOCAL)
    recorder = AccessRecorder(engram.store, delay=60)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as m:
        m.setattr(threading.Thread, "start", refuse)
        recorder.record([a.id], clock())
    assert recorder.writes == 1 and engram.store.get([a.id])[0].access_count == 1
    recorder.record([a.id], clock())  # a thread now: it writes later (or at close)
    assert recorder.writes == 1
    recorder.close()
    assert engram.store.get([a.id])[0].access_count == 2
