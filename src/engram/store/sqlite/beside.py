"""A hybrid search's keyword stage on a second thread while its vector stage runs.

SQLite releases the GIL while a statement runs, and the keyword stage is mostly FTS5's own
work (BM25 over the postings, the memories' rows); the vector scan is numkong's, which holds
the GIL. So on a second core the keyword stage costs a search about nothing beyond the scan:
``max(scan, keyword)``, not their sum. With every worker busy (many clients at once: the cores
are taken anyway) the caller runs the stage itself instead of queueing behind another's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKERS = 2
"""Keyword stages run beside their searches at once (this machine has 2 cores)."""


class Beside:
    """A few worker threads, each stage handed to a free one or run by its caller."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="engram-sqlite-keyword")
        self._free = threading.Semaphore(workers)

    def start(self, fn: Callable[[], T]) -> Callable[[], T]:
        """``fn`` started on a free worker (else run now); call the result for its value (or
        its exception)."""
        if not self._free.acquire(blocking=False):
            value = fn()
            return lambda: value

        def run() -> T:
            try:
                return fn()
            finally:
                self._free.release()

        try:
            return self._pool.submit(run).result
        except RuntimeError:  # shut down: the store is closing
            self._free.release()
            value = fn()
            return lambda: value

    def close(self) -> None:
        self._pool.shutdown()
