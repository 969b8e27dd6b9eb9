"""The HNSW index of each (model, dimension): kept up by inserts, or rebuilt after a bulk load.

Inserting into an HNSW graph is the slow part of storing vectors (200–500 per second and core
here), while building the graph in one pass over stored vectors is many times faster and runs
in parallel. So each index is in one of two states, kept in ``vector_indexes.state``:

- ``ready``: the index exists and every insert goes through it (the steady state, and a model's
  first small batch creates it at once);
- ``deferred``: a bulk load is under way: the index was dropped (or never built), vectors are
  stored without it, and a search scans the model's vectors exactly meanwhile (correct, slower).

A batch defers the index when the vectors still to store after it are many (``BULK_FROM``) and
a large share of those already indexed (``BULK_SHARE``): rebuilding everything then costs less
than inserting them one by one. The batch after which nothing is left to store builds the index
on a background thread (``CREATE INDEX CONCURRENTLY``, so the indexer keeps storing vectors
meanwhile; parallel workers and enough ``maintenance_work_mem`` for the graph to fit in memory,
without which the build is fifteen times slower) and marks it ready. Deferring and building hold
one advisory lock per index, so of several processes only one flips the state or builds, and a
process that dies mid-build leaves the index deferred (an invalid leftover is dropped and the
next batch builds it again).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from engram.errors import StorageError
from engram.store.postgres.db import Connection, PostgresDatabase, lock_key

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 32
"""Half pgvector's default (64): measured here on 20k static-model vectors, inserts run twice as
fast (512/s against 259/s) for recall@100 at ef_search 200 of 0.938 against 0.955."""

BULK_FROM = 1000
"""Vectors still to store after a batch from which the index may be deferred."""
BULK_SHARE = 0.25
"""... and which must be at least this share of the vectors the index already holds."""
CHECK_FROM = 64
"""Batches smaller than this never defer (the indexer keeping up with ordinary writes)."""
BUILD_WORKERS = 2
"""``max_parallel_maintenance_workers`` for a build (the leader process works as well)."""
BYTES_PER_DIM = 4
GRAPH_BYTES = 512
"""Per vector beyond its floats (neighbour lists at m = 16, tuple headers), to size
``maintenance_work_mem`` so the graph is built in memory."""
MAX_BUILD_MEMORY_MB = 2048

log = logging.getLogger(__name__)

# a probe of memory_vectors' primary key per memory, walking only the memories after the batch
# (OFFSET 0 keeps the planner from hashing every stored vector instead, for each batch)
_PENDING_AFTER = (
    "SELECT count(*) FROM (SELECT 1 FROM memories m LEFT JOIN LATERAL ("
    "SELECT v.content_hash FROM memory_vectors v WHERE v.memory_id = m.id AND v.model_id = %s "
    "OFFSET 0) v ON true WHERE m.seq > %s AND m.status != 'deleted' "
    "AND v.content_hash IS DISTINCT FROM m.content_hash ORDER BY m.seq LIMIT %s) s"
)


def index_name(model_id: str, dim: int) -> str:
    return "memory_vectors_hnsw_" + hashlib.sha256(f"{model_id}:{dim}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Target:
    """One (model, dimension) receiving a batch of vectors."""

    model_id: str
    dim: int

    @property
    def name(self) -> str:
        return index_name(self.model_id, self.dim)

    @property
    def lock(self) -> int:
        return lock_key(f"hnsw:{self.name}")


def _create_sql(t: Target, *, concurrently: bool) -> sql.Composed:
    return sql.SQL(
        "CREATE INDEX {} IF NOT EXISTS {} ON memory_vectors USING hnsw "
        "((embedding::vector({})) vector_cosine_ops) WITH (m = {}, ef_construction = {}) "
        "WHERE model_id = {} AND dim = {}"
    ).format(
        sql.SQL("CONCURRENTLY" if concurrently else ""),
        sql.Identifier(t.name),
        sql.Literal(t.dim),
        sql.Literal(HNSW_M),
        sql.Literal(HNSW_EF_CONSTRUCTION),
        sql.Literal(t.model_id),
        sql.Literal(t.dim),
    )


def pending_after(conn: Connection, model_id: str, seq: int, cap: int) -> int:
    """Memories after position ``seq`` still lacking a current vector of ``model_id`` (at most
    ``cap`` counted)."""
    row = conn.execute(_PENDING_AFTER, (model_id, seq, cap)).fetchone()
    return int(row[0]) if row else 0


def _indexed(conn: Connection, t: Target) -> int:
    row = conn.execute(
        "SELECT count(*) FROM memory_vectors WHERE model_id = %s AND dim = %s",
        (t.model_id, t.dim),
    ).fetchone()
    return int(row[0]) if row else 0


def _state(conn: Connection, t: Target) -> str | None:
    row = conn.execute(
        "SELECT state FROM vector_indexes WHERE model_id = %s AND dim = %s", (t.model_id, t.dim)
    ).fetchone()
    return str(row[0]) if row else None


def _worth_deferring(pending: int, indexed: int) -> bool:
    return pending >= BULK_FROM and pending >= BULK_SHARE * indexed


def prepare(db: PostgresDatabase, t: Target, last_seq: int, batch: int) -> bool:
    """Before storing a batch of ``batch`` vectors for ``t`` whose last memory is at
    ``last_seq``: create the index with the model's first small batch, or defer it for a bulk
    load. True if the index is deferred (the batch goes in without it)."""
    with db.tx() as conn:
        created = conn.execute(
            "INSERT INTO vector_indexes (model_id, dim, index_name, state) "
            "VALUES (%s, %s, %s, 'deferred') ON CONFLICT DO NOTHING RETURNING 1",
            (t.model_id, t.dim, t.name),
        ).fetchone()
        if created is not None:
            if pending_after(conn, t.model_id, last_seq, BULK_FROM) + batch < BULK_FROM:
                conn.execute(_create_sql(t, concurrently=False))  # no vectors yet: instant
                conn.execute(
                    "UPDATE vector_indexes SET state = 'ready' WHERE model_id = %s AND dim = %s",
                    (t.model_id, t.dim),
                )
                return False
            return True
        state = _state(conn, t)
    if state != "ready":
        return True
    if batch < CHECK_FROM:
        return False
    with db.reader() as conn:
        pending = pending_after(conn, t.model_id, last_seq, 10_000_000)
        if pending < BULK_FROM or not _worth_deferring(pending, _indexed(conn, t)):
            return False
    return _defer(db, t)


def _defer(db: PostgresDatabase, t: Target) -> bool:
    """Drop the index for a bulk load (unless another process holds its lock: then the batch
    goes through the index as usual)."""
    with db.connection() as conn:
        got = conn.execute("SELECT pg_try_advisory_lock(%s)", (t.lock,)).fetchone()
        if not (got and got[0]):
            return _state(conn, t) == "deferred"
        try:
            flipped = conn.execute(
                "UPDATE vector_indexes SET state = 'deferred' "
                "WHERE model_id = %s AND dim = %s AND state = 'ready' RETURNING 1",
                (t.model_id, t.dim),
            ).fetchone()
            if flipped is not None:
                log.info("bulk load: HNSW index %s deferred until the vectors are in", t.name)
                conn.execute(
                    sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(t.name))
                )
            return _state(conn, t) == "deferred"
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (t.lock,))


class Builder:
    """Builds deferred indexes on background threads (one per index in this process), so the
    indexer keeps storing vectors meanwhile; ``close`` cancels a build still running (the index
    stays deferred and the next batch after which nothing is pending starts it again)."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db
        self._lock = threading.Lock()
        self._running: dict[str, threading.Thread] = {}
        self._connections: dict[str, Connection] = {}
        self._closed = False

    def settle(self, t: Target, last_seq: int) -> None:
        """After a batch stored without the index: start building it if nothing is left to
        store after the batch."""
        with self._db.reader() as conn:
            if pending_after(conn, t.model_id, last_seq, 1):
                return
        with self._lock:
            if self._closed or t.name in self._running:
                return
            thread = threading.Thread(
                target=self._build, args=(t,), name="engram-hnsw-build", daemon=True
            )
            self._running[t.name] = thread
        thread.start()

    def building(self) -> bool:
        """Whether a build started by this process is still running."""
        with self._lock:
            return bool(self._running)

    def _build(self, t: Target) -> None:
        try:
            build(self._db, t, self._started)
        except (psycopg.Error, StorageError) as exc:
            log.warning("building HNSW index %s stopped: %s", t.name, exc)
        finally:
            with self._lock:
                self._running.pop(t.name, None)
                self._connections.pop(t.name, None)

    def _started(self, t: Target, conn: Connection) -> None:
        with self._lock:
            self._connections[t.name] = conn

    def close(self) -> None:
        with self._lock:
            self._closed = True
            threads = list(self._running.values())
            connections = list(self._connections.values())
        for conn in connections:
            conn.cancel_safe(timeout=5.0)
        for thread in threads:
            thread.join(timeout=30)


def build(
    db: PostgresDatabase, t: Target, started: Callable[[Target, Connection], None] | None = None
) -> bool:
    """Build a deferred index now; False if another process holds its lock (building it).
    ``started`` is told the connection the build runs on (to cancel it)."""
    with db.connection() as conn:
        got = conn.execute("SELECT pg_try_advisory_lock(%s)", (t.lock,)).fetchone()
        if not (got and got[0]):
            return False
        try:
            if _state(conn, t) != "deferred":
                return True
            row = conn.execute(
                "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                "WHERE c.relname = %s",
                (t.name,),
            ).fetchone()
            if row is not None and not row[0]:  # left by a build that died
                conn.execute(
                    sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(t.name))
                )
            if row is None or not row[0]:
                if started is not None:
                    started(t, conn)
                _build(conn, t)
            conn.execute(
                "UPDATE vector_indexes SET state = 'ready' WHERE model_id = %s AND dim = %s",
                (t.model_id, t.dim),
            )
            return True
        finally:
            if not conn.closed:
                conn.execute("SELECT pg_advisory_unlock(%s)", (t.lock,))


def _build(conn: Connection, t: Target) -> None:
    count = _indexed(conn, t)
    memory_mb = min(
        MAX_BUILD_MEMORY_MB,
        max(64, int(count * (t.dim * BYTES_PER_DIM + GRAPH_BYTES) * 1.25) // 2**20 + 1),
    )
    log.info("building HNSW index %s over %d vectors (%d MB)", t.name, count, memory_mb)
    try:
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(f"{memory_mb}MB")))
        conn.execute(
            sql.SQL("SET max_parallel_maintenance_workers = {}").format(sql.Literal(BUILD_WORKERS))
        )
        conn.execute(_create_sql(t, concurrently=True))
    finally:
        if not conn.closed:
            conn.execute("RESET maintenance_work_mem")
            conn.execute("RESET max_parallel_maintenance_workers")


def drop_except(conn: Connection, keep_model_id: str) -> None:
    """Forget the indexes of every other model (their vectors were just deleted)."""
    rows = conn.execute(
        "DELETE FROM vector_indexes WHERE model_id != %s RETURNING index_name", (keep_model_id,)
    ).fetchall()
    for (name,) in rows:
        conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))
