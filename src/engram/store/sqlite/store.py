"""The embedded default store: one SQLite file (connections and transactions in db.py).

Memories are written by group commit: concurrent writers queue their changes and whoever holds
the write lock commits them all in one transaction. Keyword search runs on FTS5 (fts.py),
vector search on an in-memory index over the stored vectors (vectors.py).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager, suppress
from pathlib import Path

import numpy as np

from engram.accounts import AuditEntry
from engram.errors import StorageError
from engram.models import Environment, Memory, MemoryFilter, MemoryVersion
from engram.store.columns import (
    ORDER_SQL,
    USER_ROWS,
    row_search_text,
)
from engram.store.group_commit import GroupCommit, WriteJob
from engram.store.protocol import (
    Access,
    Change,
    EmbeddingUpdate,
    Erasure,
    Hit,
    KeywordQuery,
    MemoryText,
    PendingEmbedding,
    RankFields,
    Streams,
    Vector,
    VectorAnswer,
    VectorQuery,
)
from engram.store.sqlite import fts, keyword, locks
from engram.store.sqlite.accounts import SQLiteAccountStore
from engram.store.sqlite.audit import SQLiteAuditStore, insert_audit
from engram.store.sqlite.beside import Beside
from engram.store.sqlite.capture import SQLiteCaptureStore
from engram.store.sqlite.conversations import SQLiteConversationStore
from engram.store.sqlite.db import SQLiteDatabase
from engram.store.sqlite.dialect import (
    SQLiteClientRegistry,
    SQLiteSignInFailureStore,
    SQLiteWebSessionStore,
)
from engram.store.sqlite.export import SQLiteExporter
from engram.store.sqlite.handoffs import SQLiteHandoffStore
from engram.store.sqlite.idempotency import SQLiteIdempotencyStore
from engram.store.sqlite.imports import SQLiteImportLedger
from engram.store.sqlite.memory_writes import apply_job
from engram.store.sqlite.oauth import SQLiteOAuthStore
from engram.store.sqlite.profile import SQLiteProfileStore
from engram.store.sqlite.providers import SQLiteProviderStore
from engram.store.sqlite.reviews import SQLiteReviewStore
from engram.store.sqlite.rows import (
    MEMORY_COLUMNS,
    ROWS,
    environment_from_row,
    in_list,
    memory_from_row,
    where,
)
from engram.store.sqlite.soul import SQLiteSoulStore
from engram.store.sqlite.vectors import VectorIndex
from engram.vectorindex import copies


class SQLiteStore:
    """Implements :class:`engram.store.protocol.Store` on one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.db = SQLiteDatabase(path)
        self.path = self.db.path
        self._group = GroupCommit(self._commit_group, leader=self.db.tx_lock)
        self._vectors = VectorIndex(Path(f"{self.path}.vectors"))
        self._term_counts = fts.TermCounts()
        self._beside = Beside()  # a hybrid search's keyword stage, beside its vector scan
        self.accounts = SQLiteAccountStore(self.db)
        self.audit = SQLiteAuditStore(self.db)
        self.reviews = SQLiteReviewStore(self.db)
        self.profile = SQLiteProfileStore(self.db)
        self.soul = SQLiteSoulStore(self.db)
        self.providers = SQLiteProviderStore(self.db)
        self.oauth = SQLiteOAuthStore(self.db)
        self.oauth_registry = SQLiteClientRegistry(self.db)
        self.web_sessions = SQLiteWebSessionStore(self.db)
        self.sign_ins = SQLiteSignInFailureStore(self.db)
        self.conversations = SQLiteConversationStore(self.db)
        self.export = SQLiteExporter(self.db)
        self.idempotency = SQLiteIdempotencyStore(self.db)
        self.capture = SQLiteCaptureStore(self.db)
        self.handoffs = SQLiteHandoffStore(self.db)
        self.imports = SQLiteImportLedger(self.db)

    def run_exclusive(self, name: str) -> AbstractContextManager[bool]:
        return locks.run_exclusive(self.db, name)

    def atomic(self) -> AbstractContextManager[None]:
        return self._vectors.forgetting(self.db.atomic())

    def close(self) -> None:
        # the next process starts from the copy saved; if saving fails, it reads the vectors
        # from the database instead
        with suppress(StorageError, sqlite3.Error, OSError):
            self._vectors.save(self.db.reader())
        self._beside.close()
        self.db.close()

    def applied_migrations(self) -> list[str]:
        return self.db.applied_migrations()

    # -- environments ------------------------------------------------------------------------
    def create_environment(self, env: Environment, audit: Sequence[AuditEntry] = ()) -> None:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
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
        row = self.db.point_read(
            f"SELECT {self._ENV_COLS} FROM environments WHERE id = ?", (env_id,)
        )
        return environment_from_row(row) if row else None

    def find_environment(self, owner: str, name: str) -> Environment | None:
        row = self.db.point_read(
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
        rows = self.db.reader().execute(sql + " ORDER BY created_at, name", params).fetchall()
        return [environment_from_row(r) for r in rows]

    def delete_environment(self, env_id: str, audit: Sequence[AuditEntry] = ()) -> None:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            ids = [
                r[0]
                for r in conn.execute("SELECT id FROM memories WHERE environment_id = ?", (env_id,))
            ]
            self._purge_in(conn, ids)
            conn.execute("DELETE FROM environments WHERE id = ?", (env_id,))
            conn.execute("INSERT INTO capture_fts (capture_fts) VALUES ('optimize')")

    # -- memories ----------------------------------------------------------------------------
    def write(self, changes: Sequence[Change], audit: Sequence[AuditEntry] = ()) -> None:
        """Group commit (:mod:`engram.store.group_commit`) on the single writer's lock; inside
        :meth:`atomic`, in its transaction (no other thread's write joins it)."""
        if changes and self.db.in_atomic():
            self._commit_group([WriteJob(changes, audit)])
        elif changes:
            self._group.write(WriteJob(changes, audit))

    def _commit_group(self, batch: list[WriteJob]) -> None:
        with self.db.tx_unlocked() as conn:
            for job in batch:
                apply_job(conn, job)

    def memory_stamp(self) -> int:
        # read around every lifecycle write: the writer's page cache survives its commits
        row = self.db.point_read("SELECT value FROM store_meta WHERE key = 'memory_stamp'", ())
        return int(row[0]) if row else 0

    def environment_stamp(self) -> int | None:
        row = self.db.point_read("SELECT value FROM store_meta WHERE key = 'environment_stamp'", ())
        return int(row[0]) if row else None

    def get(self, memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        found: dict[str, Memory] = {}
        conn = self.db.reader()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            marks, chunk = in_list(ids[start : start + 500])
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id IN ({marks})", chunk
            ).fetchall()
            for row in rows:
                found[row[0]] = memory_from_row(row)
        return [found[i] for i in ids if i in found]

    def superseded_from(
        self, environment_id: str, threads: Sequence[str], message_ids: Sequence[str]
    ) -> list[Memory]:
        found: dict[str, Memory] = {}
        ids, convs = list(dict.fromkeys(message_ids)), list(dict.fromkeys(threads))[:500]
        if not convs:
            return []
        in_threads, thread_params = in_list(convs)
        for start in range(0, len(ids), 500):
            marks, chunk = in_list(ids[start : start + 500])
            rows = self.db.reader().execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE environment_id = ? "
                f"AND thread IN ({in_threads}) "
                "AND status = 'superseded' AND layer = 'fact' AND EXISTS (SELECT 1 FROM "
                f"json_each(metadata, '$.source_message_ids') WHERE value IN ({marks}))",
                [environment_id, *thread_params, *chunk],
            )
            found.update((row[0], memory_from_row(row)) for row in rows)
        return list(found.values())

    def rank_fields(self, memory_ids: Sequence[str]) -> list[RankFields]:
        out: list[RankFields] = []
        conn = self.db.reader()
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            marks, chunk = in_list(ids[start : start + 500])
            rows = conn.execute(
                "SELECT id, layer, importance, confidence, updated_at, access_count, author, "
                f"thread, category, created_at FROM memories WHERE id IN ({marks})",
                chunk,
            )
            out.extend(ROWS.rank_fields(r) for r in rows)
        return out

    def memory_texts(self, flt: MemoryFilter) -> list[MemoryText]:
        cond, params = where(flt)
        rows = self.db.reader().execute(
            f"SELECT m.id, m.content, m.importance, m.pinned FROM memories m WHERE {cond} "
            f"ORDER BY {ORDER_SQL['created_at']}, m.seq DESC",
            params,
        )
        return [MemoryText(i, c, imp, bool(p)) for i, c, imp, p in rows]

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, order: str = "-updated_at"
    ) -> list[Memory]:
        cond, params = where(flt)
        order_sql = ORDER_SQL[order]
        rows = (
            self.db.reader()
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
        row = self.db.reader().execute(f"SELECT count(*) FROM memories m WHERE {cond}", params)
        return int(row.fetchone()[0])

    def versions(self, memory_id: str) -> list[MemoryVersion]:
        rows = (
            self.db.reader()
            .execute(
                "SELECT memory_id, version, action, at, actor, reason, snapshot "
                "FROM memory_versions WHERE memory_id = ? ORDER BY version",
                (memory_id,),
            )
            .fetchall()
        )
        return [ROWS.version(r) for r in rows]

    def record_access(self, accesses: Sequence[Access]) -> None:
        if not accesses:
            return
        with self.db.tx() as conn:
            conn.executemany(
                "UPDATE memories SET access_count = access_count + ?, "
                "last_accessed_at = max(coalesce(last_accessed_at, ?), ?) WHERE id = ?",
                [(a.reads, a.at.timestamp(), a.at.timestamp(), a.memory_id) for a in accesses],
            )

    def purge(self, memory_ids: Sequence[str], audit: Sequence[AuditEntry] = ()) -> int:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            return self._purge_in(conn, list(memory_ids))

    def erase(self, erasure: Erasure, audit: Sequence[AuditEntry] = ()) -> dict[str, int]:
        e = erasure
        out: dict[str, int] = {}
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            memory_ids = list(e.memory_ids)
            for env_id in e.environment_ids:
                memory_ids += [
                    r[0]
                    for r in conn.execute(
                        "SELECT id FROM memories WHERE environment_id = ?", (env_id,)
                    )
                ]
            out["memories"] = self._purge_in(conn, memory_ids)
            gone = memory_ids + list(e.conversation_ids)
            for start in range(0, len(gone), 500):
                chunk = gone[start : start + 500]
                marks = ",".join("?" * len(chunk))
                conn.execute(f"DELETE FROM import_keys WHERE target IN ({marks})", chunk)
                conn.execute(
                    f"DELETE FROM review_items WHERE memory_id IN ({marks}) "
                    f"OR other_id IN ({marks})",
                    chunk + chunk,
                )
            out["messages"] = out["conversations"] = 0
            for conv_id in e.conversation_ids:
                out["messages"] += conn.execute(
                    "DELETE FROM conversation_messages WHERE conversation_id = ?", (conv_id,)
                ).rowcount
                out["conversations"] += conn.execute(
                    "DELETE FROM conversations WHERE id = ?", (conv_id,)
                ).rowcount
            out["environments"] = sum(
                conn.execute("DELETE FROM environments WHERE id = ?", (env_id,)).rowcount
                for env_id in e.environment_ids
            )
            if out["environments"]:  # captured sessions went with them: their terms too
                conn.execute("INSERT INTO capture_fts (capture_fts) VALUES ('optimize')")
            if e.user_id is not None:
                for table, column in USER_ROWS:
                    out[table] = conn.execute(
                        f"DELETE FROM {table} WHERE {column} = ?", (e.user_id,)
                    ).rowcount
        return out

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
            # a purge is a write: an index kept in step with the stamp must forget them too
            conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'memory_stamp'")
            self._vectors.discard_saved()
            # FTS5 (before SQLite 3.42's secure-delete) keeps a deleted row's terms in its
            # segments until they merge: merging them all now leaves the purged words nowhere
            conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
        return removed

    # -- search ------------------------------------------------------------------------------
    def keyword_search(
        self, query: str, flt: MemoryFilter, *, limit: int, also: Sequence[str] = ()
    ) -> list[Hit]:
        return keyword.search(
            self.db.reader(), self._term_counts, query, flt, limit=limit, also=also
        )

    def vector_search(
        self, vector: Vector, model_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[Hit]:
        conn = self.db.reader()

        def search(want: int) -> list[tuple[str, float]]:
            return self._vectors.search(
                conn,
                model_id,
                vector,
                want,
                env_ids=flt.environment_ids,
                layers=flt.layers,
                statuses=flt.statuses,
            )

        def passing(ids: list[str]) -> set[str]:
            rest = copies.rest_of(flt, ids)
            if rest is None:
                return set()
            cond, params = where(rest)
            return {r[0] for r in conn.execute(f"SELECT m.id FROM memories m WHERE {cond}", params)}

        # environment, layer and status are filtered inside the in-memory index; anything else
        # the filter asks for is checked in SQL on the candidates, widening until enough pass
        return [Hit(i, s) for i, s in copies.filtered(search, passing, flt, limit)]

    def vector_scores(
        self, vector: Vector, model_id: str, memory_ids: Sequence[str]
    ) -> dict[str, float]:
        return self._vectors.scores_for(self.db.reader(), model_id, vector, memory_ids)

    def vector_search_many(
        self, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> list[VectorAnswer]:
        # in process: nothing to gain from one statement, each query as asked
        out = []
        for q in queries:
            hits = self.vector_search(vector, model_id, q.flt, limit=q.limit)
            found = {h.memory_id for h in hits}
            missing = [i for i in dict.fromkeys(q.also) if i not in found]
            scores = self.vector_scores(vector, model_id, missing) if missing else {}
            out.append(VectorAnswer(hits, scores))
        return out

    def search_streams(
        self, keyword: KeywordQuery, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> Streams:
        # the keyword stage and its hits' similarities on a second thread while this one
        # scans (SQLite lets go of the GIL, numkong does not)
        def keyword_stage() -> tuple[list[Hit], dict[str, float]]:
            hits = self.keyword_search(
                keyword.query, keyword.flt, limit=keyword.limit, also=keyword.also
            )
            ids = [h.memory_id for h in hits]
            return hits, self.vector_scores(vector, model_id, ids) if ids else {}

        started = self._beside.start(keyword_stage)
        try:
            nearest = [self.vector_search(vector, model_id, q.flt, limit=q.limit) for q in queries]
        finally:
            hits, similarity = started()
        found = [{h.memory_id for h in hits} for hits in nearest]
        missing = {h.memory_id for h in hits if any(h.memory_id not in f for f in found)}
        scores = {i: s for i, s in similarity.items() if i in missing}
        return Streams(hits, scores, nearest)

    def pending_embeddings(
        self, model_id: str, *, limit: int, after: int = 0
    ) -> list[PendingEmbedding]:
        # the columns of the searchable text, not whole memories (a bulk load reads them all)
        rows = (
            self.db.reader()
            .execute(
                "SELECT m.id, m.layer, m.content, m.details, m.content_hash, m.seq "
                "FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_seq = m.seq AND v.model_id = ? "
                "WHERE m.seq > ? AND m.status != 'deleted' "
                "AND (v.memory_seq IS NULL OR v.content_hash != m.content_hash) "
                "ORDER BY m.seq LIMIT ?",
                (model_id, after, limit),
            )
            .fetchall()
        )
        return [PendingEmbedding(r[0], row_search_text(r[1], r[2], r[3]), r[4], r[5]) for r in rows]

    def put_embeddings(self, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None:
        if not updates:
            return
        with self.db.tx() as conn:
            rev = conn.execute(
                "UPDATE store_meta SET value = value + ? WHERE key = 'vector_rev' RETURNING value",
                (len(updates),),
            ).fetchone()[0] - len(updates)
            # one prepared statement for the batch (was one execute per vector)
            conn.executemany(
                "INSERT OR REPLACE INTO memory_vectors "
                "(memory_seq, model_id, environment_id, content_hash, dim, vector, rev) "
                "SELECT seq, ?, environment_id, ?, ?, ?, ? FROM memories WHERE id = ?",
                [
                    (model_id, u.content_hash, vec.shape[0], vec.tobytes(), rev + i, u.memory_id)
                    for i, u in enumerate(updates, start=1)
                    for vec in (np.ascontiguousarray(u.vector, dtype=np.float32),)
                ],
            )

    def prune_embeddings(self, keep_model_id: str) -> int:
        with self.db.tx() as conn:
            removed = conn.execute(
                "DELETE FROM memory_vectors WHERE model_id != ?", (keep_model_id,)
            ).rowcount
            if removed:
                conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'vector_epoch'")
                self._vectors.discard_saved()
        return int(removed)

    def embedding_stats(self) -> dict[str, int]:
        rows = self.db.reader().execute(
            "SELECT model_id, count(*) FROM memory_vectors GROUP BY model_id"
        )
        return {r[0]: int(r[1]) for r in rows}
