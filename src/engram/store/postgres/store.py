"""The PostgreSQL + pgvector store: many stateless server processes over one database.

Writes are transactions on pooled connections (PostgreSQL handles concurrent writers); reads
run in autocommit. Keyword search uses an english ``tsvector`` generated from each memory's
keyword text and ranked with ``ts_rank_cd``, over the query's terms chosen rarest first (see
:mod:`.keywords`); vector search scans an in-process copy of the vectors and re-scores what it
keeps with pgvector (see :mod:`.vector_copy`). Each sub-store
(accounts, audit, Soul, ...) lives in its own module over the same :class:`PostgresDatabase`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager

from psycopg import sql

from engram.accounts import AuditEntry
from engram.models import Environment, Layer, Memory, MemoryFilter, MemoryVersion
from engram.store.columns import ORDER_SQL, USAGE_FIELDS, USER_ROWS, row_search_text
from engram.store.group_commit import GroupCommit, WriteJob
from engram.store.postgres import keywords, vector_copy, vectors
from engram.store.postgres.accounts import PostgresAccountStore
from engram.store.postgres.audit import PostgresAuditStore, insert_audit
from engram.store.postgres.capture import PostgresCaptureStore
from engram.store.postgres.conversations import PostgresConversationStore
from engram.store.postgres.db import Connection, PostgresDatabase, retried
from engram.store.postgres.dialect import (
    PostgresClientRegistry,
    PostgresSignInFailureStore,
    PostgresWebSessionStore,
)
from engram.store.postgres.export import PostgresExporter
from engram.store.postgres.handoffs import PostgresHandoffStore
from engram.store.postgres.idempotency import PostgresIdempotencyStore
from engram.store.postgres.imports import PostgresImportLedger
from engram.store.postgres.migrations import applied
from engram.store.postgres.oauth import PostgresOAuthStore
from engram.store.postgres.profile import PostgresProfileStore
from engram.store.postgres.providers import PostgresProviderStore
from engram.store.postgres.reviews import PostgresReviewStore
from engram.store.postgres.rows import (
    ENVIRONMENT_COLUMNS,
    ROWS,
    WRITE_COLUMNS,
    environment_from_row,
    memory_from_row,
    memory_params,
    memory_select,
    where,
)
from engram.store.postgres.soul import PostgresSoulStore
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
from engram.text import content_words
from engram.vectorindex import copies

_UPSERT = (
    f"INSERT INTO memories ({', '.join(WRITE_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * len(WRITE_COLUMNS))}) ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in WRITE_COLUMNS if c != "id" and c not in USAGE_FIELDS)
)

_VECTOR_UPSERT = (
    "INSERT INTO memory_vectors "
    "(memory_id, model_id, environment_id, content_hash, dim, embedding) "
    "SELECT id, %s, environment_id, %s, %s, %s::vector FROM memories WHERE id = %s "
    "ON CONFLICT (memory_id, model_id) DO UPDATE SET environment_id = excluded.environment_id, "
    "content_hash = excluded.content_hash, dim = excluded.dim, embedding = excluded.embedding"
)


class PostgresStore:
    """Implements :class:`engram.store.protocol.Store` on PostgreSQL with pgvector."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.db = PostgresDatabase(url, min_size=min_size, max_size=max_size)
        self.accounts = PostgresAccountStore(self.db)
        self.audit = PostgresAuditStore(self.db)
        self.soul = PostgresSoulStore(self.db)
        self.reviews = PostgresReviewStore(self.db)
        self.profile = PostgresProfileStore(self.db)
        self.conversations = PostgresConversationStore(self.db)
        self.providers = PostgresProviderStore(self.db)
        self.oauth = PostgresOAuthStore(self.db)
        self.oauth_registry = PostgresClientRegistry(self.db)
        self.web_sessions = PostgresWebSessionStore(self.db)
        self.sign_ins = PostgresSignInFailureStore(self.db)
        self.export = PostgresExporter(self.db)
        self.idempotency = PostgresIdempotencyStore(self.db)
        self.capture = PostgresCaptureStore(self.db)
        self.handoffs = PostgresHandoffStore(self.db)
        self.imports = PostgresImportLedger(self.db)
        self._group = GroupCommit(self._write_group, self._write_alone)
        self._term_frequencies = keywords.TermFrequencies()
        self._copy = vector_copy.PostgresVectorCopy()
        self._streams = ThreadPoolExecutor(4, thread_name_prefix="engram-pg-keyword")

    def close(self) -> None:
        self._streams.shutdown()
        self.db.close()

    def run_exclusive(self, name: str) -> AbstractContextManager[bool]:
        # a session advisory lock: released by PostgreSQL if this process dies holding it
        return self.db.advisory_lock(f"run:{name}", wait=False)

    def atomic(self) -> AbstractContextManager[None]:
        return self._copy.forgetting(self.db.atomic())

    def applied_migrations(self) -> list[str]:
        with self.db.reader() as conn:
            return applied(conn)

    # -- environments ------------------------------------------------------------------------
    @retried
    def create_environment(self, env: Environment, audit: Sequence[AuditEntry] = ()) -> None:
        from psycopg.types.json import Jsonb

        with self.db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO environments ({ENVIRONMENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                (env.id, env.name, env.owner, env.description, env.created_at, Jsonb(env.metadata)),
            )

    def get_environment(self, env_id: str) -> Environment | None:
        return self._one_environment("id = %s", (env_id,))

    def find_environment(self, owner: str, name: str) -> Environment | None:
        return self._one_environment("owner = %s AND name = %s", (owner, name))

    def _one_environment(self, cond: str, params: tuple[str, ...]) -> Environment | None:
        with self.db.reader() as conn:
            row = conn.execute(
                f"SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE {cond}", params
            ).fetchone()
        return environment_from_row(row) if row else None

    def list_environments(self, owner: str | None = None) -> list[Environment]:
        query = f"SELECT {ENVIRONMENT_COLUMNS} FROM environments"
        params: tuple[str, ...] = ()
        if owner is not None:
            query += " WHERE owner = %s"
            params = (owner,)
        with self.db.reader() as conn:
            rows = conn.execute(query + " ORDER BY created_at, name", params).fetchall()
        return [environment_from_row(r) for r in rows]

    @retried
    def delete_environment(self, env_id: str, audit: Sequence[AuditEntry] = ()) -> None:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM memories WHERE environment_id = %s", (env_id,)
                )
            ]
            _purge_in(conn, ids)
            conn.execute("DELETE FROM environments WHERE id = %s", (env_id,))

    # -- memories ----------------------------------------------------------------------------
    def write(self, changes: Sequence[Change], audit: Sequence[AuditEntry] = ()) -> None:
        """Group commit (:mod:`engram.store.group_commit`): each group one pipelined
        transaction (one round trip, one WAL flush, one hold of the stamp's row lock); a write
        alone is retried when PostgreSQL aborts it for contention."""
        if changes and self.db.in_atomic():  # in its transaction: no other thread's write joins
            self._write_group([WriteJob(changes, audit)])
        elif changes:
            self._group.write(WriteJob(changes, audit))

    @retried
    def _write_alone(self, job: WriteJob) -> None:
        self._write_group([job])

    def _write_group(self, batch: list[WriteJob]) -> None:
        requests = [job.inflight for job in batch]
        with self.db.tx(pipeline=True, requests=requests) as conn, conn.cursor() as cur:
            insert_audit(cur, [e for job in batch for e in job.audit])
            changes = [c for job in batch for c in job.changes]
            cur.executemany(_UPSERT, [memory_params(c.memory) for c in changes])
            cur.executemany(
                "INSERT INTO memory_versions "
                "(memory_id, version, action, at, actor, reason, snapshot) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)",
                [
                    (
                        v.memory_id,
                        v.version,
                        v.action.value,
                        v.at,
                        v.actor,
                        v.reason,
                        v.snapshot.model_dump_json(),
                    )
                    for v in (c.version for c in changes)
                ],
            )
            # one step per write() call; last, so the row lock is held only until the commit
            cur.execute("UPDATE memory_stamp SET value = value + %s WHERE id = 1", (len(batch),))

    def memory_stamp(self) -> int:
        with self.db.reader() as conn:
            row = conn.execute("SELECT value FROM memory_stamp WHERE id = 1").fetchone()
        return int(row[0]) if row else 0

    def environment_stamp(self) -> None:
        """None: reading a stamp is a round trip, as the lookup it would save is (a cache of
        environments measured slower here, see the README's PostgreSQL section)."""
        return None

    def get(self, memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        ids = list(dict.fromkeys(memory_ids))
        with self.db.reader() as conn:
            rows = conn.execute(
                f"SELECT {memory_select()} FROM memories m WHERE m.id = ANY(%s)", (ids,)
            ).fetchall()
        found = {r[0]: memory_from_row(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def superseded_from(
        self, environment_id: str, threads: Sequence[str], message_ids: Sequence[str]
    ) -> list[Memory]:
        if not message_ids or not threads:
            return []
        with self.db.reader() as conn:
            rows = conn.execute(
                f"SELECT {memory_select()} FROM memories m WHERE m.environment_id = %s "
                "AND m.thread = ANY(%s) AND m.status = 'superseded' AND m.layer = 'fact' "
                "AND m.metadata -> 'source_message_ids' ?| %s::text[]",
                (
                    environment_id,
                    list(dict.fromkeys(threads)),
                    list(dict.fromkeys(message_ids)),
                ),
            ).fetchall()
        return [memory_from_row(r) for r in rows]

    def rank_fields(self, memory_ids: Sequence[str]) -> list[RankFields]:
        if not memory_ids:
            return []
        with self.db.reader() as conn:
            rows = conn.execute(
                "SELECT id, layer, importance, confidence, updated_at, access_count, author, "
                "thread, category, created_at FROM memories WHERE id = ANY(%s)",
                (list(dict.fromkeys(memory_ids)),),
            ).fetchall()
        return [ROWS.rank_fields(r) for r in rows]

    def memory_texts(self, flt: MemoryFilter) -> list[MemoryText]:
        cond, params = where(flt)
        with self.db.reader() as conn:
            rows = conn.execute(
                f"SELECT m.id, m.content, m.importance, m.pinned FROM memories m WHERE {cond} "
                f"ORDER BY {ORDER_SQL['created_at']}, m.seq DESC",
                params,
            ).fetchall()
        return [MemoryText(i, c, imp, bool(p)) for i, c, imp, p in rows]

    def list_memories(
        self, flt: MemoryFilter, *, limit: int, offset: int = 0, order: str = "-updated_at"
    ) -> list[Memory]:
        cond, params = where(flt)
        with self.db.reader() as conn:
            rows = conn.execute(
                f"SELECT {memory_select()} FROM memories m WHERE {cond} "
                f"ORDER BY {ORDER_SQL[order]}, m.seq DESC LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
        return [memory_from_row(r) for r in rows]

    def count(self, flt: MemoryFilter) -> int:
        cond, params = where(flt)
        with self.db.reader() as conn:
            row = conn.execute(f"SELECT count(*) FROM memories m WHERE {cond}", params).fetchone()
        return int(row[0]) if row else 0

    def versions(self, memory_id: str) -> list[MemoryVersion]:
        with self.db.reader() as conn:
            rows = conn.execute(
                "SELECT memory_id, version, action, at, actor, reason, snapshot::text "
                "FROM memory_versions WHERE memory_id = %s ORDER BY version",
                (memory_id,),
            ).fetchall()
        return [ROWS.version(r) for r in rows]

    @retried
    def record_access(self, accesses: Sequence[Access]) -> None:
        if not accesses:
            return
        with self.db.tx(pipeline=True) as conn:
            # access counts are a ranking signal, not data: their commit does not wait for the
            # WAL flush (a crash may lose the last fraction of a second of them, never more,
            # and never part of a transaction)
            conn.execute("SET LOCAL synchronous_commit = off")
            # rows locked in id order (no deadlock between two processes' flushes)
            conn.execute(
                "UPDATE memories m SET access_count = m.access_count + c.n, "
                "last_accessed_at = GREATEST(m.last_accessed_at, c.at) FROM ("
                "SELECT id, sum(n)::int AS n, max(at) AS at "
                "FROM unnest(%s::text[], %s::int[], %s::timestamptz[]) AS a(id, n, at) "
                "GROUP BY id ORDER BY id"
                ") c WHERE m.id = c.id",
                (
                    [a.memory_id for a in accesses],
                    [a.reads for a in accesses],
                    [a.at for a in accesses],
                ),
            )

    @retried
    def erase(self, erasure: Erasure, audit: Sequence[AuditEntry] = ()) -> dict[str, int]:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            return _erase_in(conn, erasure)

    @retried
    def purge(self, memory_ids: Sequence[str], audit: Sequence[AuditEntry] = ()) -> int:
        with self.db.tx() as conn:
            insert_audit(conn, audit)
            return _purge_in(conn, list(memory_ids))

    # -- search ------------------------------------------------------------------------------
    def keyword_search(
        self, query: str, flt: MemoryFilter, *, limit: int, also: Sequence[str] = ()
    ) -> list[Hit]:
        return self._keyword(query, flt, limit, None, also)[0]

    def _keyword(
        self,
        query: str,
        flt: MemoryFilter,
        limit: int,
        near: tuple[Vector, str] | None,
        also: Sequence[str] = (),
    ) -> tuple[list[Hit], dict[str, float]]:
        """The keyword hits, and with ``near`` (a query vector and its model) the similarity of
        each hit with a vector of the model, read in the same statement."""
        asked = list(dict.fromkeys(content_words(query)))
        if not asked:
            return [], {}
        extra = [w for w in dict.fromkeys(content_words(" ".join(also))) if w not in asked]
        terms = [*asked, *extra]
        cond, params = where(flt)
        with self.db.reader() as conn:
            planned = keywords.plan(conn, asked, self._term_frequencies, extra)
            if planned is None:
                return [], {}
            statement, first = keywords.search(planned, cond, near)
            rows = conn.execute(statement, [*first, *params, limit]).fetchall()
            stems = self._lexemes(conn, terms)
        hits = []
        for r in rows:
            own, near_words = set(r[3]), set(r[4])
            found = frozenset(w for w in terms if stems[w] & own)
            context = frozenset(w for w in terms if stems[w] & near_words) - found
            hits.append(Hit(r[0], float(r[1]), found, context, Layer(r[2])))
        return hits, {r[0]: float(r[5]) for r in rows if r[5] is not None}

    def _lexemes(self, conn: Connection, words: list[str]) -> dict[str, set[str]]:
        """Each word's lexemes as the english configuration makes them (cached)."""
        known = self._term_frequencies.terms(conn, words)
        return {w: set(known[w].lexemes) for w in words}

    def vector_search(
        self, vector: Vector, model_id: str, flt: MemoryFilter, *, limit: int
    ) -> list[Hit]:
        return self.vector_search_many(vector, model_id, [VectorQuery(flt, limit)])[0].hits

    def vector_search_many(
        self, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> list[VectorAnswer]:
        # the in-process copy (see :mod:`.vector_copy`): one refresh and one read of the float32
        # vectors kept for every search the copy filters alone, and the similarities asked about
        plain = [at for at, q in enumerate(queries) if not copies.needs_sql(q.flt)]
        also = list(dict.fromkeys(i for q in queries for i in q.also))
        hits: dict[int, list[Hit]] = {}
        with self.db.reader() as conn:
            answer = self._copy.search(
                conn,
                model_id,
                vector,
                [_ask(queries[at].flt, queries[at].limit) for at in plain],
                also,
            )
            for at, found in zip(plain, answer.hits, strict=True):
                hits[at] = [Hit(i, s) for i, s in found]
            for at, q in enumerate(queries):
                if at not in hits:
                    hits[at] = self._filtered(conn, vector, model_id, q.flt, q.limit)
        out = []
        for at, q in enumerate(queries):
            found_ids = {h.memory_id for h in hits[at]}
            scores = {i: answer.scores[i] for i in q.also if i in answer.scores}
            out.append(
                VectorAnswer(hits[at], {i: s for i, s in scores.items() if i not in found_ids})
            )
        return out

    def _filtered(
        self, conn: Connection, vector: Vector, model_id: str, flt: MemoryFilter, limit: int
    ) -> list[Hit]:
        """A search whose filter asks for more than the copy keeps: the copy's candidates
        checked in SQL, widening until enough pass (:func:`engram.vectorindex.copies.filtered`);
        the copy was refreshed by the same call."""

        def search(want: int) -> list[tuple[str, float]]:
            asks = [_ask(flt, want)]
            return self._copy.search(conn, model_id, vector, asks, refresh=False).hits[0]

        def passing(ids: list[str]) -> set[str]:
            rest = copies.rest_of(flt, ids)
            if rest is None:
                return set()
            cond, params = where(rest)
            query = "SELECT m.id FROM memories m WHERE " + cond
            return {r[0] for r in conn.execute(query, params)}

        return [Hit(i, s) for i, s in copies.filtered(search, passing, flt, limit)]

    def search_streams(
        self, keyword: KeywordQuery, vector: Vector, model_id: str, queries: Sequence[VectorQuery]
    ) -> Streams:
        # two server processes at once: the keyword statement (with its hits' similarities)
        # on a second connection while this one runs the vector statement
        found = self._streams.submit(
            self._keyword,
            keyword.query,
            keyword.flt,
            keyword.limit,
            (vector, model_id),
            keyword.also,
        )
        try:
            nearest = self.vector_search_many(vector, model_id, queries)
        finally:
            hits, similarity = found.result()
        return Streams(hits, similarity, [a.hits for a in nearest])

    def vector_scores(
        self, vector: Vector, model_id: str, memory_ids: Sequence[str]
    ) -> dict[str, float]:
        if not memory_ids:
            return {}
        with self.db.reader() as conn:
            found = vector_copy.exact(conn, model_id, vector, [], memory_ids)
        return {row.memory_id: row.score for row in found}

    def pending_embeddings(
        self, model_id: str, *, limit: int, after: int = 0
    ) -> list[PendingEmbedding]:
        with self.db.reader() as conn:
            # the columns of the searchable text, not whole memories (a bulk load reads them all)
            rows = conn.execute(
                "SELECT m.id, m.layer, m.content, m.details::text, m.content_hash, m.seq "
                "FROM memories m "
                "LEFT JOIN memory_vectors v ON v.memory_id = m.id AND v.model_id = %s "
                "WHERE m.seq > %s AND m.status != 'deleted' "
                "AND (v.memory_id IS NULL OR v.content_hash != m.content_hash) "
                "ORDER BY m.seq LIMIT %s",
                (model_id, after, limit),
            ).fetchall()
        return [PendingEmbedding(r[0], row_search_text(r[1], r[2], r[3]), r[4], r[5]) for r in rows]

    @retried
    def put_embeddings(self, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None:
        if not updates:
            return
        # rows locked in one order everywhere: concurrent upserters (indexers, maintenance
        # runs) queue instead of deadlocking; no index over the vectors but their keys (search
        # scans each process's copy, :mod:`.vector_copy`), so a bulk load is plain inserts
        rows = [
            (
                model_id,
                u.content_hash,
                int(u.vector.shape[0]),
                vectors.Embedding(u.vector),
                u.memory_id,
            )
            for u in sorted(updates, key=lambda u: u.memory_id)
        ]
        with self.db.tx() as conn, conn.cursor() as cur:
            cur.executemany(_VECTOR_UPSERT, rows)

    @retried
    def prune_embeddings(self, keep_model_id: str) -> int:
        with self.db.tx() as conn:
            removed = conn.execute(
                "DELETE FROM memory_vectors WHERE model_id != %s", (keep_model_id,)
            ).rowcount
        return int(removed)

    def embedding_stats(self) -> dict[str, int]:
        with self.db.reader() as conn:
            rows = conn.execute(
                "SELECT model_id, count(*) FROM memory_vectors GROUP BY model_id"
            ).fetchall()
        return {r[0]: int(r[1]) for r in rows}


def _erase_in(conn: Connection, e: Erasure) -> dict[str, int]:
    out: dict[str, int] = {}
    memory_ids = list(e.memory_ids)
    envs = list(e.environment_ids)
    if envs:
        memory_ids += [
            r[0]
            for r in conn.execute("SELECT id FROM memories WHERE environment_id = ANY(%s)", (envs,))
        ]
    out["memories"] = _purge_in(conn, memory_ids)
    gone = memory_ids + list(e.conversation_ids)
    conn.execute("DELETE FROM import_keys WHERE target = ANY(%s)", (gone,))
    conn.execute(
        "DELETE FROM review_items WHERE memory_id = ANY(%s) OR other_id = ANY(%s)", (gone, gone)
    )
    convs = list(e.conversation_ids)
    out["messages"] = int(
        conn.execute(
            "DELETE FROM conversation_messages WHERE conversation_id = ANY(%s)", (convs,)
        ).rowcount
    )
    out["conversations"] = int(
        conn.execute("DELETE FROM conversations WHERE id = ANY(%s)", (convs,)).rowcount
    )
    out["environments"] = int(
        conn.execute("DELETE FROM environments WHERE id = ANY(%s)", (envs,)).rowcount
    )
    if e.user_id is not None:
        for table, column in USER_ROWS:
            query = sql.SQL("DELETE FROM {} WHERE {} = %s").format(
                sql.Identifier(table), sql.Identifier(column)
            )
            out[table] = int(conn.execute(query, (e.user_id,)).rowcount)
    return out


def _purge_in(conn: Connection, ids: list[str]) -> int:
    """Delete memories, their versions and vectors for good (the index lives in the row)."""
    if not ids:
        return 0
    conn.execute("DELETE FROM memory_vectors WHERE memory_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM memory_versions WHERE memory_id = ANY(%s)", (ids,))
    removed = int(conn.execute("DELETE FROM memories WHERE id = ANY(%s)", (ids,)).rowcount)
    if removed:  # a purge is a write: an index kept in step with the stamp must forget them
        conn.execute("UPDATE memory_stamp SET value = value + 1 WHERE id = 1")
    return removed


def _ask(flt: MemoryFilter, limit: int) -> vector_copy.Ask:
    return vector_copy.Ask(limit, flt.environment_ids, flt.layers, flt.statuses)
