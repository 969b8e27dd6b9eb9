"""The embedded default store: one SQLite file, WAL, one writer and many readers.

Writes go through a single connection guarded by a lock (SQLite allows one writer at a time;
serialising in-process avoids busy retries). Each thread reads through its own connection, so
reads never wait for writes (an environment lookup uses the writer's connection when it is
idle, never waiting for it). WAL checkpoints run on a background thread (see checkpoint.py).
Other processes may open the same file; ``busy_timeout`` makes their writers queue instead of
failing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from engram.accounts import AuditEntry
from engram.errors import Conflict, StorageError
from engram.models import Environment, Layer, Memory, MemoryFilter, MemoryVersion
from engram.store.columns import MEMORY_FIELDS
from engram.store.protocol import (
    Change,
    EmbeddingUpdate,
    Hit,
    PendingEmbedding,
    RankFields,
    Vector,
)
from engram.store.sqlite import fts, locks, migrations
from engram.store.sqlite.accounts import SQLiteAccountStore
from engram.store.sqlite.audit import SQLiteAuditStore, insert_audit
from engram.store.sqlite.capture import SQLiteCaptureStore
from engram.store.sqlite.checkpoint import BACKSTOP_FRAMES, Checkpointer
from engram.store.sqlite.reviews import SQLiteReviewStore
from engram.store.sqlite.rows import (
    MEMORY_COLUMNS,
    environment_from_row,
    inserted_rowid,
    memory_from_row,
    memory_params,
    where,
)
from engram.store.sqlite.soul import SQLiteSoulStore
from engram.store.sqlite.vectors import VectorIndex

_ORDERS = {
    "updated_at": "m.updated_at ASC",
    "-updated_at": "m.updated_at DESC",
    "created_at": "m.created_at ASC",
    "-created_at": "m.created_at DESC",
    "importance": "m.importance ASC",
    "-importance": "m.importance DESC",
    "-access_count": "m.access_count DESC",
}

_PLACEHOLDERS = ",".join("?" * (len(MEMORY_FIELDS) + 1))
_INSERT = f"INSERT INTO memories ({MEMORY_COLUMNS}, content_hash) VALUES ({_PLACEHOLDERS})"
_UPSERT = (
    _INSERT
    + " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(
        f"{c.strip()} = excluded.{c.strip()}"
        for c in (MEMORY_COLUMNS + ", content_hash").split(",")
        if c.strip() not in ("id",)
    )
    + " RETURNING seq"
)


@dataclass(eq=False)
class _WriteJob:
    changes: Sequence[Change]
    audit: Sequence[AuditEntry]
    done: bool = False
    error: Exception | None = None


def _connect(path: Path) -> sqlite3.Connection:
    # autocommit mode: every transaction in this module is explicit (BEGIN ... COMMIT)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    # wait up to 30 s for another process's write lock instead of failing at once
    conn.execute("PRAGMA busy_timeout = 30000")
    # enforce REFERENCES clauses (vectors cascade with their memory)
    conn.execute("PRAGMA foreign_keys = ON")
    # in WAL mode NORMAL syncs at checkpoints: a commit survives a killed process; after a power
    # loss the newest commits may be rolled back, never corrupted
    conn.execute("PRAGMA synchronous = NORMAL")
    # 64 MiB page cache per connection
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


def _first_row(
    conn: sqlite3.Connection, sql: str, params: Sequence[object]
) -> tuple[Any, ...] | None:
    rows = conn.execute(sql, params).fetchall()  # read to the end: no statement left open
    return tuple(rows[0]) if rows else None


class SQLiteStore:
    """Implements :class:`engram.store.protocol.Store` on one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
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
            self._checkpointer = Checkpointer(_connect(self.path), self._write_lock)
            # a store dropped without close() must not leave the thread behind
            weakref.finalize(self, self._checkpointer.request_stop)
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"cannot open the database {self.path}: {exc}") from exc
        self._queue: list[_WriteJob] = []
        self._queue_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._vectors = VectorIndex()
        self._term_counts = fts.TermCounts()
        self._closed = False
        self.accounts = SQLiteAccountStore(self)
        self.audit = SQLiteAuditStore(self)
        self.reviews = SQLiteReviewStore(self)
        self.capture = SQLiteCaptureStore(self)
        self.soul = SQLiteSoulStore(self)

    # -- connections -------------------------------------------------------------------------
    def reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError("the store is closed")
            conn = _connect(self.path)
            conn.execute("PRAGMA query_only = ON")  # a reader never writes
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _point_read(self, sql: str, params: Sequence[object]) -> tuple[Any, ...] | None:
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
        """Hold the single write lock (for a group of transactions)."""
        with self._write_lock:
            yield

    @contextmanager
    def _tx_unlocked(self) -> Iterator[sqlite3.Connection]:
        if self._closed:
            raise StorageError("the store is closed")
        conn = self._writer
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException as exc:
            conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.IntegrityError):
                # a unique or reference rule broke: the caller's view of the data was stale
                raise Conflict(f"the change clashes with stored data: {exc}") from exc
            raise
        conn.execute("COMMIT")
        self._checkpointer.committed(conn.total_changes)

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the single writer connection."""
        with self._write_lock, self._tx_unlocked() as conn:
            yield conn

    def run_exclusive(self, name: str) -> AbstractContextManager[bool]:
        return locks.run_exclusive(self, name)

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

    def applied_migrations(self) -> list[str]:
        return migrations.applied(self.reader())

    # -- environments ------------------------------------------------------------------------
    def create_environment(self, env: Environment) -> None:
        with self.tx() as conn:
            conn.execute(
                "INSERT INTO environments (id, name, owner, description, created_at, metadata) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    env.id,
                    env.name,
                    env.owner,
                    env.description,
                    env.created_at.timestamp(),
                    json.dumps(env.metadata),
                ),
            )

    _ENV_COLS = "id, name, owner, description, created_at, metadata"

    def get_environment(self, env_id: str) -> Environment | None:
        row = self._point_read(f"SELECT {self._ENV_COLS} FROM environments WHERE id = ?", (env_id,))
        return environment_from_row(row) if row else None

    def find_environment(self, owner: str, name: str) -> Environment | None:
        row = self._point_read(
            f"SELECT {self._ENV_COLS} FROM environments WHERE owner = ? AND name = ?",
            (owner, name),
        )
        return environment_from_row(row) if row else None

    def list_environments(self, owner: str | None = None) -> list[Environment]:
        sql = f"SELECT {self._ENV_COLS} FROM environments"
        params: tuple[str, ...] = ()
        if owner is not None:
            sql += " WHERE owner = ?"
            params = (owner,)
        rows = self.reader().execute(sql + " ORDER BY created_at, name", params).fetchall()
        return [environment_from_row(r) for r in rows]

    def delete_environment(self, env_id: str) -> None:
        with self.tx() as conn:
            ids = [
                r[0]
                for r in conn.execute("SELECT id FROM memories WHERE environment_id = ?", (env_id,))
            ]
            self._purge_in(conn, ids)
            conn.execute("DELETE FROM environments WHERE id = ?", (env_id,))

    # -- memories ----------------------------------------------------------------------------
    def write(self, changes: Sequence[Change], audit: Sequence[AuditEntry] = ()) -> None:
        """Group commit: concurrent writers queue their changes; whoever gets the write lock
        commits every queued write in one transaction, so throughput grows with the number of
        writers. A failing write is retried alone, so it never takes the others down."""
        if not changes:
            return
        job = _WriteJob(changes, audit)
        with self._queue_lock:
            self._queue.append(job)
        with self._write_lock:
            if not job.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit_batch(batch)
        if job.error is not None:
            raise job.error

    def _commit_batch(self, batch: list[_WriteJob]) -> None:
        try:
            with self._tx_unlocked() as conn:
                for job in batch:
                    self._apply(conn, job)
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
            else:
                for job in batch:  # isolate the failure: each write alone
                    try:
                        with self._tx_unlocked() as conn:
                            self._apply(conn, job)
                    except Exception as single:
                        job.error = single
        for job in batch:
            job.done = True

    def _apply(self, conn: sqlite3.Connection, job: _WriteJob) -> None:
        insert_audit(conn, job.audit)
        for change in job.changes:
            m = change.memory
            new = change.version.version == 1  # nothing indexed or embedded yet
            if new:  # a plain INSERT (no RETURNING): an id already stored fails, a Conflict
                seq = inserted_rowid(conn.execute(_INSERT, memory_params(m)))
            else:
                seq = conn.execute(_UPSERT, memory_params(m)).fetchone()[0]
            fts.index(conn, seq, m, replace=not new)
            if not new:
                # a changed memory (status, layer...) must reach the in-memory vector index
                conn.execute(
                    "UPDATE memory_vectors SET rev = (SELECT value + 1 FROM store_meta "
                    "WHERE key = 'vector_rev') WHERE memory_seq = ?",
                    (seq,),
                )
                conn.execute(
                    "UPDATE store_meta SET value = value + 1 WHERE key = 'vector_rev' "
                    "AND changes() > 0"
                )
            v = change.version
            conn.execute(
                "INSERT INTO memory_versions "
                "(memory_id, version, action, at, actor, reason, snapshot) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    v.memory_id,
                    v.version,
                    v.action.value,
                    v.at.timestamp(),
                    v.actor,
                    v.reason,
                    v.snapshot.model_dump_json(),
                ),
            )

    def get(self, memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        found: dict[str, Memory] = {}
        conn = self.reader()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
            for row in rows:
                found[row[0]] = memory_from_row(row)
        return [found[i] for i in ids if i in found]

    def rank_fields(self, memory_ids: Sequence[str]) -> list[RankFields]:
        out: list[RankFields] = []
        conn = self.reader()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = conn.execute(
                "SELECT id, layer, importance, confidence, updated_at, access_count, author, "
                f"thread FROM memories WHERE id IN ({','.join('?' * len(chunk))})",
                chunk,
            )
            out.extend(
                RankFields(r[0], Layer(r[1]), r[2], r[3], datetime.fromtimestamp(r[4], UTC), *r[5:])
                for r in rows
            )
        return out

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, order: str = "-updated_at"
    ) -> list[Memory]:
        cond, params = where(flt)
        order_sql = _ORDERS[order]
        rows = (
            self.reader()
            .execute(
                f"SELECT {', '.join('m.' + c.strip() for c in MEMORY_COLUMNS.split(','))} "
                f"FROM memories m WHERE {cond} ORDER BY {order_sql}, m.seq DESC LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
            .fetchall()
        )
        return [memory_from_row(r) for r in rows]

    def count(self, flt: MemoryFilter) -> int:
        cond, params = where(flt)
        row = self.reader().execute(f"SELECT count(*) FROM memories m WHERE {cond}", params)
        return int(row.fetchone()[0])

    def versions(self, memory_id: str) -> list[MemoryVersion]:
        rows = (
            self.reader()
            .execute(
                "SELECT memory_id, version, action, at, actor, reason, snapshot "
                "FROM memory_versions WHERE memory_id = ? ORDER BY version",
                (memory_id,),
            )
            .fetchall()
        )
        return [
            MemoryVersion(
                memory_id=r[0],
                version=r[1],
                action=r[2],
                at=datetime.fromtimestamp(r[3], UTC),
                actor=r[4],
                reason=r[5],
                snapshot=Memory.model_validate_json(r[6]),
            )
            for r in rows
        ]

    def record_access(self, memory_ids: Sequence[str], at: datetime) -> None:
        if not memory_ids:
            return
        with self.tx() as conn:
            conn.executemany(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? "
                "WHERE id = ?",
                [(at.timestamp(), i) for i in memory_ids],
            )

    def purge(self, memory_ids: Sequence[str]) -> int:
        with self.tx() as conn:
            return self._purge_in(conn, list(memory_ids))

    def _purge_in(self, conn: sqlite3.Connection, ids: list[str]) -> int:
        removed = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            seqs = [
                r[0] for r in conn.execute(f"SELECT seq FROM memories WHERE id IN ({marks})", chunk)
            ]
            if not seqs:
                continue
            seq_marks = ",".join("?" * len(seqs))
            conn.execute(f"DELETE FROM memories_fts WHERE rowid IN ({seq_marks})", seqs)
            conn.execute(f"DELETE FROM memory_vectors WHERE memory_seq IN ({seq_marks})", seqs)
            conn.execute(f"DELETE FROM memory_versions WHERE memory_id IN ({marks})", chunk)
            removed += conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", chunk).rowcount
        if removed:
            conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'vector_epoch'")
        return removed

    # -- search ------------------------------------------------------------------------------
    def keyword_search(self, query: str, flt: MemoryFilter, *, limit: int) -> list[Hit]:
        conn = self.reader()
        terms, match = fts.plan(conn, query, flt, self._term_counts)
        if not terms:
            return []
        cond, params = where(flt)
        rank = fts.rank_expression()
        rows = conn.execute(
            f"SELECT m.id, -{rank} FROM memories_fts "
            "JOIN memories m ON m.seq = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {cond} ORDER BY {rank} LIMIT ?",
            [match, *params, limit],
        ).fetchall()
        return [Hit(r[0], float(r[1])) for r in rows]

    def vector_search(
        self, vector: Vector, model_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[Hit]:
        conn = self.reader()
        # environment, layer and status are filtered inside the in-memory index; anything else
        # the filter asks for is checked in SQL on the candidates, widening until enough pass
        needs_sql = bool(
            flt.categories
            or flt.tags
            or flt.ids
            or flt.created_after
            or flt.created_before
            or flt.updated_after
            or flt.updated_before
            or flt.min_importance is not None
            or flt.max_importance is not None
        )
        want = limit if not needs_sql else limit * 4
        while True:
            candidates = self._vectors.search(
                conn,
                model_id,
                vector,
                want,
                env_ids=flt.environment_ids,
                layers=flt.layers,
                statuses=flt.statuses,
            )
            if not needs_sql:
                return [Hit(i, s) for i, s in candidates]
            ids = [c[0] for c in candidates]
            rest = flt.model_copy(
                update={"environment_ids": [], "layers": [], "statuses": [], "ids": ids}
            )
            cond, params = where(rest)
            passing = {
                r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {cond}", params)
            }
            hits = [Hit(i, s) for i, s in candidates if i in passing]
            if len(hits) >= limit or len(candidates) < want:
                return hits[:limit]
            want *= 4

    def vector_scores(
        self, vector: Vector, model_id: str, memory_ids: Sequence[str]
    ) -> dict[str, float]:
        return self._vectors.scores_for(self.reader(), model_id, vector, memory_ids)

    def pending_embeddings(
        self, model_id: str, *, limit: int, after: int = 0
    ) -> list[PendingEmbedding]:
        cols = ", ".join("m." + c.strip() for c in MEMORY_COLUMNS.split(","))
        rows = (
            self.reader()
            .execute(
                f"SELECT {cols}, m.content_hash, m.seq FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_seq = m.seq AND v.model_id = ? "
                "WHERE m.seq > ? AND m.status != 'deleted' "
                "AND (v.memory_seq IS NULL OR v.content_hash != m.content_hash) "
                "ORDER BY m.seq LIMIT ?",
                (model_id, after, limit),
            )
            .fetchall()
        )
        return [
            PendingEmbedding(r[0], memory_from_row(r).search_text(), r[-2], r[-1]) for r in rows
        ]

    def put_embeddings(self, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None:
        if not updates:
            return
        with self.tx() as conn:
            rev = conn.execute(
                "UPDATE store_meta SET value = value + ? WHERE key = 'vector_rev' RETURNING value",
                (len(updates),),
            ).fetchone()[0] - len(updates)
            for u in updates:
                rev += 1
                vec = np.ascontiguousarray(u.vector, dtype=np.float32)
                conn.execute(
                    "INSERT OR REPLACE INTO memory_vectors "
                    "(memory_seq, model_id, environment_id, content_hash, dim, vector, rev) "
                    "SELECT seq, ?, environment_id, ?, ?, ?, ? FROM memories WHERE id = ?",
                    (model_id, u.content_hash, vec.shape[0], vec.tobytes(), rev, u.memory_id),
                )

    def prune_embeddings(self, keep_model_id: str) -> int:
        with self.tx() as conn:
            removed = conn.execute(
                "DELETE FROM memory_vectors WHERE model_id != ?", (keep_model_id,)
            ).rowcount
            if removed:
                conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'vector_epoch'")
        return int(removed)

    def embedding_stats(self) -> dict[str, int]:
        rows = self.reader().execute(
            "SELECT model_id, count(*) FROM memory_vectors GROUP BY model_id"
        )
        return {r[0]: int(r[1]) for r in rows}
