"""Connections to one SQLite file: one writer, a reader per thread, transactions, WAL.

Interface for the store and its sub-stores (accounts, audit, soul, conversations, providers,
reviews, locks), which receive the :class:`SQLiteDatabase` as ``db``:

- ``with db.tx() as conn:`` one write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled
  back if the block raises) on the single writer connection, under the write lock. A broken
  unique or reference rule surfaces as :class:`~engram.errors.Conflict`.
- ``db.reader()`` this thread's connection for reads (``query_only``); it sees the last commit
  and never waits for the writer.
- ``with db.tx_lock():`` hold the write lock across several ``db.tx_unlocked()`` transactions
  (the store's group commit).
- ``with db.atomic():`` one transaction around the block for this thread: inside it ``tx()``
  and ``tx_unlocked()`` are savepoints of it and ``reader()`` is the writer connection (reads
  see the block's writes); it commits when the block ends, or nothing of it is kept.
- ``db.point_read(sql, params)`` one row of a small lookup that writes depend on.
- Schema changes are named migrations appended to ``migrations_later.LATER``; they run when a
  :class:`SQLiteDatabase` is opened.

Writes go through a single connection guarded by a lock (SQLite allows one writer at a time;
serialising in-process avoids busy retries). WAL checkpoints run on a background thread (see
checkpoint.py). Other processes may open the same file; ``busy_timeout`` makes their writers
queue instead of failing.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engram.errors import Conflict, StorageError
from engram.private_files import private_database
from engram.store import idempotency
from engram.store.sqlite import migrations
from engram.store.sqlite.checkpoint import BACKSTOP_FRAMES, Checkpointer

WRITER_CACHE_KIB = 16 * 1024
"""The writer's page cache. It survives the writer's own commits, so it holds what writes
touch again (the tables' and indexes' right edges, the keyword index's segments): at 100k
memories 16 MiB wrote as fast as 64 MiB (``bench.latency``), and a cache fills up to its size
and stays there."""
READER_CACHE_KIB = 8 * 1024
"""A reading thread's page cache: dropped whenever another connection commits, and one per
thread that reads (a server's threadpool, the indexer, each client thread) adds up."""


def _connect(path: Path, cache_kib: int = WRITER_CACHE_KIB) -> sqlite3.Connection:
    # autocommit mode: every transaction in this module is explicit (BEGIN ... COMMIT)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    # wait up to 30 s for another process's write lock instead of failing at once
    conn.execute("PRAGMA busy_timeout = 30000")
    # enforce REFERENCES clauses (vectors cascade with their memory)
    conn.execute("PRAGMA foreign_keys = ON")
    # in WAL mode NORMAL syncs at checkpoints: a commit survives a killed process; after a power
    # loss the newest commits may be rolled back, never corrupted
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(f"PRAGMA cache_size = -{cache_kib}")  # KiB (negative), not pages
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute("PRAGMA secure_delete = ON")  # deleted rows are zeroed: a purge leaves no text
    return conn


def _first_row(
    conn: sqlite3.Connection, sql: str, params: Sequence[object]
) -> tuple[Any, ...] | None:
    rows = conn.execute(sql, params).fetchall()  # read to the end: no statement left open
    return tuple(rows[0]) if rows else None


class SQLiteDatabase:
    """One SQLite file in WAL mode, with the schema migrated on open."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        private_database(self.path)  # 0600, and so its -wal and -shm (engram.private_files)
        try:
            self._writer = _connect(self.path)
            # write-ahead log: readers see the last commit while a writer works
            mode = self._writer.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StorageError(f"{self.path}: could not switch to WAL (got {mode})")
            migrations.migrate(self._writer)
            # checkpoints run on a background thread (see checkpoint.py); this is the backstop
            self._writer.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_FRAMES}")
            self._write_lock = threading.Lock()
            # a checkpoint copies WAL frames to the file without the page cache
            self._checkpointer = Checkpointer(_connect(self.path, 1024), self._write_lock)
            # a database dropped without close() must not leave the thread behind
            weakref.finalize(self, self._checkpointer.request_stop)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open the database {self.path}: {exc}") from exc
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False

    def in_atomic(self) -> bool:
        """Is :meth:`atomic` open on this thread?"""
        return bool(getattr(self._local, "atomic", False))

    def reader(self) -> sqlite3.Connection:
        """This thread's read-only connection (opened on first use); inside :meth:`atomic`,
        the writer, so that the block reads what it wrote."""
        if self.in_atomic():
            return self._writer
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError("the store is closed")
            conn = _connect(self.path, READER_CACHE_KIB)
            conn.execute("PRAGMA query_only = ON")  # a reader never writes
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def point_read(self, sql: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        """One row of a small lookup that writes depend on (an environment). On the writer
        connection when no write is under way: its page cache survives its own commits, while
        a reader's is dropped after every commit, so that right after a write the lookup
        through a reader costs several page reads (and syscalls). Else through the reader."""
        if self._write_lock.acquire(blocking=False):
            try:
                if not self._closed:
                    return _first_row(self._writer, sql, params)
            finally:
                self._write_lock.release()
        return _first_row(self.reader(), sql, params)

    @contextmanager
    def tx_lock(self) -> Iterator[None]:
        """Hold the single write lock (for a group of transactions); inside :meth:`atomic` this
        thread holds it already."""
        if self.in_atomic():
            yield
            return
        with self._write_lock:
            yield

    @contextmanager
    def tx_unlocked(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; the caller holds :meth:`tx_lock`. Inside :meth:`atomic`, a
        savepoint of its transaction."""
        if self._closed:
            raise StorageError("the store is closed")
        conn = self._writer
        nested = self.in_atomic()
        conn.execute("SAVEPOINT tx" if nested else "BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException as exc:
            conn.execute("ROLLBACK TO tx" if nested else "ROLLBACK")
            if nested:
                conn.execute("RELEASE tx")
            if isinstance(exc, sqlite3.IntegrityError):
                # a unique or reference rule broke: the caller's view of the data was stale
                raise Conflict(f"the change clashes with stored data: {exc}") from exc
            raise
        if nested:
            conn.execute("RELEASE tx")
            return
        conn.execute("COMMIT")
        self._checkpointer.committed(conn.total_changes)

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the single writer connection."""
        with self.tx_lock(), self.tx_unlocked() as conn:
            yield conn
            idempotency.mark_executed(conn, idempotency.CURRENT.get(), "?")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction around the block, for this thread (see the module docstring). The
        write lock is held throughout: other threads' writes wait for the block, other
        processes' for as long as ``busy_timeout`` allows. Not re-entrant."""
        if self.in_atomic():
            raise StorageError("a store transaction is already open on this thread")
        with self._write_lock, self.tx_unlocked():
            self._local.atomic = True
            try:
                yield
            finally:
                self._local.atomic = False

    def applied_migrations(self) -> list[str]:
        return migrations.applied(self.reader())

    def close(self) -> None:
        self._checkpointer.stop()  # before the write lock: a pass may be waiting for it
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
            with self._readers_lock:
                for conn in self._readers:
                    conn.close()
                self._readers.clear()
            try:
                self._writer.execute("PRAGMA optimize")
            finally:
                self._writer.close()
