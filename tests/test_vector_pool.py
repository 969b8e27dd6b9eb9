"""The vector scan's pool: the best-scoring passing rows, chosen through a sampled threshold,
are exactly those a partition of every passing row's score picks."""

from __future__ import annotations

import numpy as np
import pytest

from engram.vectorindex import vector_pool


def _expected(scores: np.ndarray, size: int, rows: np.ndarray) -> set[int]:
    return set(rows[np.argsort(-scores[rows], kind="stable")[:size]].tolist())


@pytest.mark.parametrize("n", [1000, 70_000, 300_000])
@pytest.mark.parametrize("share", [1.0, 0.5, 0.01])
def test_best_rows_are_the_best_passing(n: int, share: float) -> None:
    rng = np.random.default_rng(n + int(share * 100))
    # distinct integer scores, as the 8-bit first stage gives, in a skewed spread
    scores = rng.permutation(n).astype(np.int32) ** 2 // 7
    scores = rng.permutation(n).astype(np.int64) * 3 + (scores % 3)
    passing = rng.random(n) < share
    rows = np.flatnonzero(passing)
    mask = None if rows.size == n else passing
    for size in (1, 50, 4000, rows.size + 5):
        got = vector_pool.best_rows(scores, size, rows, mask)
        assert len(got) == min(size, rows.size)
        assert set(got.tolist()) == _expected(scores, size, rows)


def test_a_sample_that_misses_falls_back_to_every_row() -> None:
    n = 100_000
    scores = np.zeros(n, dtype=np.int32)
    # the best rows sit between the sampled ones, and only they pass the filter
    best = np.arange(1, n, vector_pool.STEP)[:30]
    scores[best] = 1000 + np.arange(30)
    passing = np.zeros(n, dtype=bool)
    passing[best] = True
    got = vector_pool.best_rows(scores, 20, best, passing)
    assert set(got.tolist()) == set(best[10:].tolist())


def test_the_pool_does_not_grow_with_the_store() -> None:
    assert vector_pool.pool_size(10, 1_000_000) == vector_pool.POOL
    assert vector_pool.pool_size(10, 10_000_000) == vector_pool.POOL
    assert vector_pool.pool_size(10, 100_000) == 2000  # as before at 100k
    assert vector_pool.pool_size(500, 1_000_000) == 10_000
