"""WAL checkpoints off the commit path.

SQLite's automatic checkpoint runs inside the COMMIT that takes the log past
``wal_autocheckpoint`` pages (1000 by default), and in WAL mode with ``synchronous = NORMAL`` a
checkpoint is where the fsyncs happen: the WAL (every frame written since the previous
checkpoint), then the database file, then the log header when the next write restarts the log.
A single memory write is ~25 frames, so every ~40th write paid for three fsyncs: more than half
of the time of a one-by-one ingest went there.

Here the writer connection leaves checkpoints to a background thread with its own connection.
After roughly every ``CHANGES_PER_PASS`` changed rows it runs a PASSIVE checkpoint, which copies
committed frames into the database file while writers keep appending to the log. A PASSIVE
checkpoint alone never lets a busy log restart from its beginning (the writer is always ahead
of it), so once the log holds ``LOG_LIMIT`` frames the next pass holds the store's write lock:
it has only the frames written since the previous pass left to copy, and the next write
restarts the log.

Durability is what it was: a commit is acknowledged once its frames are in the WAL (which
survives a killed process), and a checkpoint only copies committed frames, syncing the WAL
before it overwrites any page of the database file. If the thread stopped, the writer's own
automatic checkpoint at ``BACKSTOP_FRAMES`` would still bound the log.
"""

from __future__ import annotations

import sqlite3
import threading

CHANGES_PER_PASS = 1000
"""Changed rows (``total_changes``, FTS shadow rows included: ~13 per memory written) between
two background passes: ~80 single memory writes, ~2000 WAL frames."""
LOG_LIMIT = 10_000
"""WAL frames (~40 MiB of 4 KiB pages) after which a pass holds the write lock so that the log
restarts. A larger log means rarer stalls but a larger file and a colder page cache."""
BACKSTOP_FRAMES = 2 * LOG_LIMIT
"""The writer connection's own ``wal_autocheckpoint``: reached only if the passes fall behind."""


class Checkpointer:
    """Runs the WAL checkpoints of one store on a background thread."""

    def __init__(self, conn: sqlite3.Connection, write_lock: threading.Lock) -> None:
        self._conn = conn
        self._write_lock = write_lock
        self._wake = threading.Event()
        self._stopping = False
        self._signalled_at = 0
        self._thread = threading.Thread(
            target=self._run, name="engram-sqlite-checkpoint", daemon=True
        )
        self._thread.start()

    def committed(self, total_changes: int) -> None:
        """Called by the writer, holding the write lock, after each commit with its
        connection's ``total_changes``."""
        if abs(total_changes - self._signalled_at) >= CHANGES_PER_PASS:  # (the count may wrap)
            self._signalled_at = total_changes
            self._wake.set()

    def _pass(self) -> int:
        """One PASSIVE checkpoint; returns the number of frames in the log."""
        row = self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(row[1]) if row is not None else 0

    def _run(self) -> None:
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    if self._pass() >= LOG_LIMIT:
                        with self._write_lock:
                            if self._stopping:
                                return
                            self._pass()
                except sqlite3.Error:
                    # e.g. another process holds the checkpoint lock: the next pass tries
                    # again, and the backstop bounds the log meanwhile
                    continue
        finally:
            self._conn.close()

    def request_stop(self) -> None:
        """Ask the thread to end after the pass under way (it closes its connection)."""
        self._stopping = True
        self._wake.set()

    def stop(self) -> None:
        """Stop the thread and wait for it. Must be called without holding the write lock."""
        self.request_stop()
        if threading.current_thread() is not self._thread:
            self._thread.join()
