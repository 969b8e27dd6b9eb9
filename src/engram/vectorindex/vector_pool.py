"""The vector scan's pool: the rows of best first-stage score that the full codes re-score.

**A fixed size.** The pool was ``n / 50`` rows, so its selection and re-scoring grew with the
store (20,000 rows at a million memories: 11 ms to choose, 13 ms to re-score). On the
benchmark's million memories a pool of ``POOL`` rows finds the same top 10 as the exact
float32 scan for 0.998 of them (2,000: 0.996; 20,000: 1.000; 50 queries), so the share of
``n`` in the pool stops at ``POOL`` (from 200,000 rows; below, the pool is as it was).

**Chosen without sorting a million scores.** ``argpartition`` over every row's score costs
about 10 ms at a million rows. Instead a threshold is read from every ``STEP``-th score (a
sample a ``STEP``-th of the size), set so that about twice the pool lies above it; the rows
over it that pass the filter are a few thousand, and the pool is the best of those. When they
are fewer than the pool (a filter that passes few rows, or an unlucky sample), the pool is
chosen among every passing row as before. Either way the pool is exactly the best-scoring
``size`` rows that pass: every one of them scores at least the threshold whenever that many
passing rows do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.intp]
Scores = npt.NDArray[np.int32] | npt.NDArray[np.floating[Any]]
"""A stage's scores: the 8-bit dot products as they come, or scaled to cosines."""

POOL = 4000
"""Rows re-scored by the full codes, at least (see the module doc for the recall measured)."""
STEP = 64
"""Every ``STEP``-th score is sampled for the threshold."""
SAMPLED_FROM = 1 << 16
"""Below this many rows every passing row's score is partitioned directly (fast enough)."""


def pool_size(limit: int, n: int) -> int:
    """``max(20 × limit, 2,000, n / 50)`` as before up to 200,000 rows (the same answers
    there), and never more than ``POOL`` for the share of ``n``."""
    return max(20 * limit, 2000, min(n // 50, POOL))


def best_rows(scores: Scores, size: int, rows: Rows, passing: npt.NDArray[np.bool_] | None) -> Rows:
    """The ``size`` entries of ``rows`` (the rows passing a filter, ascending; ``passing``
    their mask over every row, ``None`` when every row passes) of highest ``scores``, in no
    particular order: what ``argpartition`` of ``scores[rows]`` picks."""
    if size >= rows.size:
        return rows
    n = scores.shape[0]
    if n >= SAMPLED_FROM:
        sample = scores[::STEP]
        above = min(sample.size - 1, 2 * size // STEP + 8)  # sampled rows kept above it
        threshold = np.partition(sample, sample.size - 1 - above)[sample.size - 1 - above]
        over = np.flatnonzero(scores >= threshold)
        if passing is not None:
            over = over[passing[over]]
        if over.size >= size:
            return over[np.argpartition(-scores[over], size - 1)[:size]]
    return rows[np.argpartition(-scores[rows], size - 1)[:size]]
