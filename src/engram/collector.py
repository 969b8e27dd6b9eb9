"""Python's cyclic garbage collector set up for a long-running process: a server, or an
application that holds one :class:`engram.Engram` and searches it around every model call.

Two settings, both applied by :func:`settle` once start-up and warm-up are done:

- **Freeze what start-up made.** One full collection, then ``gc.freeze()``: every object alive
  then (modules, classes, the model, the store's caches) moves to a permanent generation that
  no later collection scans. Without it, each full collection walks them all again (about 55k
  objects after a 100k-memory warm-up) to find nothing.
- **A larger young generation.** A young collection runs when the tracked containers
  allocated, minus those freed, pass the first threshold (CPython's default: 700). A search or
  a context assembly holds a few thousand small records at its peak (hits, rank fields,
  breakdowns), freed when it returns, so at 700 it triggered ~2.6 young collections (and its
  share of older ones) per assembly that found almost nothing; at ``YOUNG_THRESHOLD`` the
  records are freed by reference counting before a collection is due.

``engram serve`` calls :func:`settle` after its warm-up; an application using the Python API
calls it once after :meth:`engram.Engram.warm` (see the README's latency section).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000
"""Tracked allocations (net of frees) between young collections, instead of CPython's 700."""


def settle(young: int = YOUNG_THRESHOLD) -> None:
    """Collect once, freeze every object alive now out of later collections, and raise the
    young generation's threshold to ``young`` (the older generations' thresholds unchanged).
    Calling it again freezes what was made since; objects frozen are never collected, so call
    it after start-up, not per request."""
    if young < 1:
        raise ValueError(f"young must be at least 1, got {young}")
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young, older, oldest)
