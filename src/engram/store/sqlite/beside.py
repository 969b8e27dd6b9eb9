"""A hybrid search's keyword stage on a second thread while its vector stage runs.

SQLite releases the GIL while a statement runs, and the keyword stage is mostly FTS5's own
work (BM25 over the postings, the memories' rows); the vector scan is numkong's, which holds
the GIL. So on an idle second core the keyword stage costs a search about nothing beyond the
scan: ``max(scan, keyword)``, not their sum. Only a search that runs alone hands its stage
over: with other searches under way the cores are taken anyway, and handing over measured
slower with 4 searching threads (about 10 % fewer searches a second), so each of those runs
its own stage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Beside:
    """One worker thread, given the stage of a search that runs alone."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="engram-sqlite-keyword")
        self._lock = threading.Lock()
        self._running = 0  # stages started and not yet asked for

    def start(self, fn: Callable[[], T]) -> Callable[[], T]:
        """``fn`` started on the worker if no other search is under way (else run now); call
        the result, exactly once, for its value (or its exception)."""
        with self._lock:
            self._running += 1
            alone = self._running == 1
        if alone:
            try:
                future = self._pool.submit(fn)
            except RuntimeError:  # shut down: the store is closing
                pass
            else:
                return lambda: self._finish(future.result)
        return lambda: self._finish(fn)

    def _finish(self, value: Callable[[], T]) -> T:
        try:
            return value()
        finally:
            with self._lock:
                self._running -= 1

    def close(self) -> None:
        self._pool.shutdown()
