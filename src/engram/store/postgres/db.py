"""Connections to one PostgreSQL database: a pool, transactions, readers and advisory locks.

Interface for the sub-stores (accounts, audit, soul, conversations, providers, reviews), which
receive the :class:`PostgresDatabase` as ``db``:

- ``with db.tx() as conn:`` one transaction (``BEGIN`` ... ``COMMIT``; rolled back if the block
  raises). Use it for every write; several statements in it commit together.
- ``with db.reader() as conn:`` a pooled connection in autocommit mode for reads; each statement
  sees the latest commit. Never write through it.
- ``with db.atomic():`` one transaction around the block for this thread: inside it every
  ``tx()`` is a savepoint of it, and ``reader()`` and ``connection()`` are its connection (reads
  see the block's writes); it commits when the block ends, or nothing of it is kept.
- ``with db.advisory_lock("maintenance") as got:`` a session-level advisory lock held for the
  block, so work that must run once across processes (maintenance, extraction jobs) is
  serialised through the database. ``wait=False`` returns ``False`` at once if another holder
  has it.
- ``conn`` is a ``psycopg.Connection`` returning tuples; placeholders are ``%s``; ``jsonb``
  columns come back as Python objects (pass ``psycopg.types.json.Jsonb(value)`` to write),
  ``timestamptz`` as aware UTC datetimes (every session runs with ``TimeZone=UTC``).
- PostgreSQL may abort a transaction for a deadlock (SQLSTATE 40P01) or a serialization failure
  (40001): ``tx()`` raises :class:`Contention` for both, and a method whose transactions may be
  re-run from the start carries ``@retried``, which runs it again (bounded, with jittered
  backoff). ``db.run(work)`` does the same for one ``work(conn)`` transaction, optionally
  SERIALIZABLE.
- Schema changes are named migrations appended to ``migrations_later.LATER``; they run when a
  :class:`PostgresDatabase` is opened, each in its own transaction, under an advisory lock.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from engram.errors import Conflict, StorageError
from engram.store.idempotency import CURRENT, InFlight, mark_executed
from engram.store.postgres.vectors import register

Connection = psycopg.Connection[tuple[Any, ...]]
P = ParamSpec("P")
T = TypeVar("T")
log = logging.getLogger("engram.store.postgres")

ATTEMPTS = 6
"""How many times :func:`retried` runs a transaction that PostgreSQL aborted for contention."""
BACKOFF_BASE = 0.01
BACKOFF_CAP = 0.5


class Contention(StorageError):
    """PostgreSQL aborted the transaction for a deadlock (40P01) or a serialization failure
    (40001); nothing of it was committed and running it again may succeed. Left over after
    the retries it is a :class:`StorageError` (503: try again later)."""


def backoff(attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (1, 2, ...): full jitter over an exponential
    bound, so that the transactions that collided do not collide again in step."""
    return random.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt))


def retried(method: Callable[P, T]) -> Callable[P, T]:
    """Run ``method`` again when one of its transactions is aborted for contention (at most
    :data:`ATTEMPTS` runs). Only for methods whose effects are all inside their transactions
    (or idempotent): an aborted run left nothing behind."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        for attempt in range(1, ATTEMPTS):
            try:
                return method(*args, **kwargs)
            except Contention as exc:
                log.info("retrying %s after %s", method.__qualname__, exc.details.get("sqlstate"))
                time.sleep(backoff(attempt))
        return method(*args, **kwargs)

    return wrapper


SESSION = "-c TimeZone=UTC -c max_parallel_workers_per_gather=0 -c jit=off"
"""Every session's settings: UTC timestamps; no parallel workers and no JIT compilation.
Engram's statements read a few rows by index, and a parallel plan (chosen from estimates, e.g.
for a table bulk-loaded since it was last analyzed) pays a worker's start, about 5 ms, per
statement: the vector copy's refresh took 7 ms instead of 0.1 at 100k memories, and searches
and assemblies waited on it (search p50 22-24 ms against 14-18 with workers off, the same
database). JIT compiling a statement misestimated as costly can add tens of ms the same way."""


def _configure(conn: Connection) -> None:
    """Each new pooled connection: the parameter types the stores send (vectors in binary)."""
    register(conn.adapters)


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
                kwargs={"autocommit": True, "options": SESSION},
                open=True,
                name="engram",
                configure=_configure,
            )
            self.pool.wait(timeout=timeout)
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageError(f"cannot connect to PostgreSQL: {exc}") from exc
        self._closed = False
        self._local = threading.local()  # .atomic: the connection of this thread's atomic()
        if migrate:
            from engram.store.postgres import migrations

            try:
                migrations.migrate(self)
            except BaseException:
                self.close()
                raise

    def in_atomic(self) -> bool:
        """Is :meth:`atomic` open on this thread?"""
        return getattr(self._local, "atomic", None) is not None

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A pooled connection in autocommit mode, returned to the pool afterwards; inside
        :meth:`atomic`, its connection (in its transaction)."""
        if self._closed:
            raise StorageError("the store is closed")
        held: Connection | None = getattr(self._local, "atomic", None)
        if held is not None:
            yield held
            return
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise StorageError(f"no PostgreSQL connection available: {exc}") from exc

    @contextmanager
    def tx(
        self, *, pipeline: bool = False, requests: Sequence[InFlight | None] | None = None
    ) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back if it raises. A broken
        unique or reference rule surfaces as :class:`Conflict` (the caller's view was stale).
        ``pipeline``: the statements are sent without waiting for each result (psycopg's
        pipeline mode; the block must not read results) and the transaction costs one round
        trip (no BEGIN and COMMIT of their own). ``requests``: the reserved requests whose
        writes it commits (default: the one in flight in this context). Inside :meth:`atomic`,
        a savepoint of its transaction (never a pipeline)."""
        marks = [CURRENT.get()] if requests is None else list(requests)
        pipeline = pipeline and not self.in_atomic()
        try:
            with (
                self.connection() as conn,
                # a pipeline's statements up to its sync are one implicit transaction,
                # committed at the sync, all rolled back if one fails; in an atomic() block
                # transaction() is a savepoint
                conn.pipeline() if pipeline else conn.transaction(),
            ):
                yield conn
                for inflight in marks:  # a reserved request in flight wrote
                    mark_executed(conn, inflight, "%s")
        except psycopg.errors.IntegrityError as exc:
            raise Conflict(f"the change clashes with stored data: {exc}") from exc
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
            raise Contention(
                f"PostgreSQL aborted the transaction ({exc.sqlstate}): {exc}",
                sqlstate=exc.sqlstate,
            ) from exc

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction around the block, for this thread (see the module docstring), on
        one pooled connection held throughout. Not re-entrant."""
        if self.in_atomic():
            raise StorageError("a store transaction is already open on this thread")
        try:
            with self.connection() as conn, conn.transaction():
                self._local.atomic = conn
                try:
                    yield
                finally:
                    self._local.atomic = None
        except psycopg.errors.IntegrityError as exc:
            raise Conflict(f"the change clashes with stored data: {exc}") from exc

    def run(self, work: Callable[[Connection], T], *, serializable: bool = False) -> T:
        """``work(conn)`` in one transaction (SERIALIZABLE if asked), run again from the start
        when PostgreSQL aborts it for a deadlock or a serialization failure (see
        :func:`retried`). ``work`` must have no effect outside the transaction."""

        @retried
        def once() -> T:
            with self.tx() as conn:
                if serializable:
                    conn.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
                return work(conn)

        return once()

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
