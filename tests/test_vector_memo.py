"""The vector copy's memo of a query's first-stage scores is each thread's own: a context
assembly asks once per layer with the same vector, one ask after the other on its thread, and
a search on another thread in between does not make its next ask scan the matrix again (on
both backends). The answers are the same either way."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.store import Store
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
