"""The vector copy's memo of a query's first-stage scores is each thread's own: a context
assembly asks once per layer with the same vector, one ask after the other on its thread, and
a search on another thread in between does not make its next ask scan the matrix again (on
both backends); the copy keeps the memos of the last few threads only. The answers are the
same either way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.store import Store
from engram.vectorindex.copies import MEMO_THREADS
from engram.vectorindex.matrix import Matrix
from tests.conftest import FakeClock, embed_randomly

MODEL = "m16"


def _on_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_a_search_between_two_asks_of_a_thread_keeps_its_scores(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    engram = Engram(store, clock=FakeClock())
    env = engram.environments.create("memo", LOCAL)
    news = [NewMemory(content=f"note number {i}") for i in range(200)]
    ids = [m.id for m in engram.memories.add_many(news, LOCAL, "memo")]
    embed_randomly(store, MODEL, ids, np.random.default_rng(7))
    rng = np.random.default_rng(8)
    mine, theirs = (rng.standard_normal(16).astype(np.float32) for _ in range(2))
    flt = MemoryFilter(environment_ids=[env.id])
    first = store.vector_search(mine, MODEL, flt, limit=10)  # loads the copy, scans once

    scans = 0
    scan = Matrix.scan

    def counted(self: Matrix, query: Any, *, low: bool) -> Any:
        nonlocal scans
        scans += 1
        return scan(self, query, low=low)

    monkeypatch.setattr(Matrix, "scan", counted)
    other = _on_thread(lambda: store.vector_search(theirs, MODEL, flt, limit=10))
    assert scans == 1  # the other thread's query is scanned
    again = store.vector_search(mine, MODEL, flt, limit=10)
    assert scans == 1  # this thread's last query is still remembered
    assert again == first
    assert other == store.vector_search(theirs, MODEL, flt, limit=10)
    assert scans == 2  # the other thread's memo is not this one's

    # the memos are bounded: after MEMO_THREADS other threads searched, this one's is gone
    store.vector_search(mine, MODEL, flt, limit=10)
    scans = 0
    assert store.vector_search(mine, MODEL, flt, limit=10) == first
    assert scans == 0  # remembered
    # (alive together, so that no two share a thread id)
    queries = [rng.standard_normal(16).astype(np.float32) for _ in range(MEMO_THREADS)]
    done = threading.Barrier(MEMO_THREADS)

    def search_then_wait(query: np.ndarray) -> None:
        store.vector_search(query, MODEL, flt, limit=10)
        done.wait(30)

    threads = [threading.Thread(target=search_then_wait, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    scans = 0
    assert store.vector_search(mine, MODEL, flt, limit=10) == first
    assert scans == 1
