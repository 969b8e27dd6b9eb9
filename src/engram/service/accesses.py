"""Counting reads off the request's path.

A search or an assembly hands the ids it delivered to :class:`AccessRecorder`, which writes
them a moment later from a thread of its own, every read that came in meanwhile merged into
one transaction (:meth:`Store.record_access`: per memory, how many reads and the latest).

Why: counting a read is a write. Done inside the request, every search and every assembly took
the store's write lock (SQLite has one writer) and paid a commit, so a read waited behind
whatever write held the lock, and concurrent readers queued behind each other's counts.

Counts are a ranking signal (the frequency factor, and what decay treats as recently read), not
data: a crash may lose the reads of the last :data:`DELAY` seconds, never part of a write.
:meth:`flush` writes what is pending now (a caller that reads the counts right after a search
calls it); :meth:`close` stops the thread and flushes. A count that cannot be written is
logged and dropped: it never fails the search that made it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from datetime import datetime

from engram.store import Access, Store

log = logging.getLogger(__name__)

DELAY = 0.25
"""Seconds a read waits to be counted, so that the reads of that moment share one write."""
IDLE = 30.0
"""Seconds without a read after which the thread ends (the next read starts another)."""
MAX_PENDING = 50_000
"""Reads held at most; the read that reaches it writes them all itself (bounded memory)."""


class AccessRecorder:
    def __init__(
        self, store: Store, *, delay: float = DELAY, max_pending: int = MAX_PENDING
    ) -> None:
        self._store = store
        self._delay = delay
        self._max = max_pending
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._writing = threading.Lock()
        """Held from taking the pending reads until they are written: a :meth:`flush` that
        returns has every read recorded before it in the store."""
        self._pending: dict[str, tuple[int, datetime]] = {}
        self._held = 0
        self._thread: threading.Thread | None = None
        self._closed = False
        self._stop = threading.Event()
        self.writes = 0
        """Transactions written so far."""

    def record(self, memory_ids: Sequence[str], at: datetime) -> None:
        """Count one read of each id (an id listed twice is read twice), at ``at``."""
        if not memory_ids:
            return
        with self._lock:
            pending = self._pending
            for memory_id in memory_ids:
                reads, last = pending.get(memory_id, (0, at))
                pending[memory_id] = (reads + 1, max(last, at))
            self._held += len(memory_ids)
            now = self._closed or self._held >= self._max
            if not now:
                if self._thread is None:
                    now = not self._start()
                self._wake.notify()
        if now:
            self.flush()

    def _start(self) -> bool:
        """Start the thread (the lock held); False when none can start (the interpreter is
        shutting down, or out of threads): the caller then writes the reads itself."""
        thread = threading.Thread(target=self._run, name="engram-accesses", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:
            log.warning("access counts written inline: no thread (%s)", exc)
            return False
        self._thread = thread
        return True

    def flush(self) -> None:
        """Write every read recorded so far, in this thread."""
        with self._writing:
            with self._lock:
                pending, self._pending, self._held = self._pending, {}, 0
            if not pending:
                return
            accesses = [Access(i, reads, at) for i, (reads, at) in pending.items()]
            try:
                self._store.record_access(accesses)
            except Exception as exc:  # a ranking signal: never fails the read that made it
                log.warning("%d access counts not recorded: %s", len(accesses), exc)
                return
            self.writes += 1

    def close(self) -> None:
        """Stop the thread and write what is pending (before the store closes)."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
            self._stop.set()
            self._wake.notify()
        if thread is not None:
            thread.join()
        self.flush()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._pending and not self._closed:
                    self._wake.wait(IDLE)
                if self._closed:
                    return
                if not self._pending:  # idle: the next read starts a thread again
                    self._thread = None
                    return
            if self._stop.wait(self._delay):  # the reads of the next moment join this write
                return  # closed meanwhile: close() writes them
            self.flush()
