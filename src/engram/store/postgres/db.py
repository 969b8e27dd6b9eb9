"""Connections to one PostgreSQL database: a pool, transactions, readers and advisory locks.

Interface for the sub-stores (accounts, audit, soul, conversations, providers, reviews), which
receive the :class:`PostgresDatabase` as ``db``:

- ``with db.tx() as conn:`` one transaction (``BEGIN`` ... ``COMMIT``; rolled back if the block
  raises). Use it for every write; several statements in it commit together.
- ``with db.reader() as conn:`` a pooled connection in autocommit mode for reads; each statement
  sees the latest commit. Never write through it.
- ``with db.advisory_lock("maintenance") as got:`` a session-level advisory lock held for the
  block, so work that must run once across processes (maintenance, extraction jobs) is
  serialised through the database. ``wait=False`` returns ``False`` at once if another holder
  has it.
- ``conn`` is a ``psycopg.Connection`` returning tuples; placeholders are ``%s``; ``jsonb``
  columns come back as Python objects (pass ``psycopg.types.json.Jsonb(value)`` to write),
  ``timestamptz`` as aware UTC datetimes (every session runs with ``TimeZone=UTC``).
- Schema changes are named migrations appended to ``migrations.MIGRATIONS``; they run when a
  :class:`PostgresDatabase` is opened, each in its own transaction, under an advisory lock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from engram.errors import Conflict, StorageError

Connection = psycopg.Connection[tuple[Any, ...]]


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory-lock key for ``name`` (the same in every process)."""
    digest = hashlib.sha256(f"engram:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresDatabase:
    """A connection pool over one database, with the schema migrated on open."""

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        migrate: bool = True,
    ) -> None:
        self.url = url
        try:
            self.pool: ConnectionPool[Connection] = ConnectionPool(
                url,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                # autocommit: transactions are explicit (tx()), readers see each commit
                kwargs={"autocommit": True, "options": "-c TimeZone=UTC"},
                open=True,
                name="engram",
            )
            self.pool.wait(timeout=timeout)
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self._closed = False
        if migrate:
            from engram.store.postgres import migrations

            try:
                migrations.migrate(self)
            except BaseException:
                self.close()
                raise

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A pooled connection in autocommit mode, returned to the pool afterwards."""
        if self._closed:
            raise StorageError("the store is closed")
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StorageError(f"no PostgreSQL connection available: {exc}") from exc

    @contextmanager
    def tx(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back if it raises. A broken
        unique or reference rule surfaces as :class:`Conflict` (the caller's view was stale)."""
        try:
            with self.connection() as conn, conn.transaction():
                yield conn
        except psycopg.errors.IntegrityError as exc:
            raise Conflict(f"the change clashes with stored data: {exc}") from exc

    @contextmanager
    def reader(self) -> Iterator[Connection]:
        """A connection for reads (autocommit: each statement sees the latest commit)."""
        with self.connection() as conn:
            yield conn

    @contextmanager
    def advisory_lock(self, name: str, *, wait: bool = True) -> Iterator[bool]:
        """Hold the session advisory lock ``name`` for the block; yields whether it was taken
        (always True when ``wait``). Holds one pooled connection for the duration."""
        key = lock_key(name)
        with self.connection() as conn:
            if wait:
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                got = True
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                got = bool(row and row[0])
            try:
                yield got
            finally:
                if got and not conn.closed:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.pool.close()
