"""Vector search on PostgreSQL: an in-process copy of each model's vectors, as SQLite keeps.

The copy is :mod:`engram.vectorindex` (8-bit codes, a projected first stage from 20,000 rows, the
pool re-scored by the full codes); a search scans it in this process and then reads the
stored vectors of the rows it kept (about ``limit + 32``) in one statement, so the scores
returned are exact cosines (pgvector's, as ``vector_scores`` gives) and the order is the exact
order among them. No HNSW index is
scanned: at 100k memories its recall@10 was 0.46-0.75 for ``ef_search`` 40-240 and one scan
cost 30-90 ms of an assembly, an exact scan inside PostgreSQL 174-363 ms (README).

**Kept current across processes.** Any server process may write vectors, so each row of
``memory_vectors`` records the transaction that last wrote it (``writer``, an ``xid8`` set by
a trigger on every insert and update; a change to a memory's environment, layer or status
rewrites its vectors' ``writer`` as well, by a trigger on ``memories``). A copy remembers the
snapshot of its last read; the next read, in one statement, takes the rows whose writer that
snapshot did not see: those from a transaction in progress then (``pg_snapshot_xip``) or begun
after (``≥ pg_snapshot_xmax``). A transaction slow to commit is therefore never skipped,
whatever order its rows were written in: it is in the snapshot's in-progress list until a read
sees it committed. Deleting vectors (a purge, an erasure, pruning a model, a memory deleted
with its vectors) bumps ``vector_epoch`` in the same transaction (a statement trigger), and a
copy that sees a new epoch loads every vector again, as SQLite's does.

A full load reads every vector of the model in one REPEATABLE READ transaction, whose snapshot
is the one remembered; nothing is kept between runs (a process loads its copy at its first
search: about 2 s at 100k memories).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from psycopg import pq, sql

from engram import heap
from engram.models import Layer, Status
from engram.store.postgres import vectors
from engram.store.postgres.db import Connection
from engram.vectorindex.copies import Copies, Row
from engram.vectorindex.matrix import LOAD_CHUNK, Matrix, Vector

_FIELDS = (
    "m.seq, m.environment_id, m.layer, m.status, v.dim, "
    # pgvector's binary form is its dimension and a reserved word, then big-endian float32s
    "substring(vector_send(v.embedding) from 5)"
)
_EPOCH = "(SELECT value FROM vector_epoch WHERE id = 1)"
_CHANGED = (
    f"WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap, {_EPOCH} AS epoch) "
    f"SELECT s.snap::text, s.epoch, c.* FROM s LEFT JOIN LATERAL (SELECT {_FIELDS} "
    "FROM memory_vectors v JOIN memories m ON m.id = v.memory_id WHERE v.model_id = %(model)s "
    "AND (v.writer >= pg_snapshot_xmax(%(snap)s::pg_snapshot) "
    "OR v.writer = ANY(ARRAY(SELECT pg_snapshot_xip(%(snap)s::pg_snapshot))))) c ON true"
)
"""The rows written by transactions the last read's snapshot did not see, and this read's
snapshot and epoch (one row of NULLs besides when nothing changed)."""
_ALL = (
    f"SELECT {_FIELDS} FROM memory_vectors v JOIN memories m ON m.id = v.memory_id "
    "WHERE v.model_id = %s"
)
BIG_ENDIAN = np.dtype(">f4")


@dataclass(frozen=True)
class Ask:
    """One search of the copy: its limit and what the copy filters."""

    limit: int
    env_ids: Sequence[str] = ()
    layers: Sequence[Layer] = ()
    statuses: Sequence[Status] = ()


@dataclass(frozen=True)
class Answer:
    """The copy's answers to several searches of one query vector."""

    hits: list[list[tuple[str, float]]]
    """(memory id, cosine) of each search, best first (ties by id)."""
    scores: dict[str, float]
    """The exact cosine of each id asked about that has a vector of the model."""


class PostgresVectorCopy(Copies):
    """The vectors of one PostgreSQL database, copied into this process."""

    def __init__(self) -> None:
        super().__init__()
        self._snapshots: dict[str, str] = {}

    def forget(self) -> None:
        super().forget()
        with self._lock:
            self._snapshots.clear()

    def search(
        self,
        conn: Connection,
        model_id: str,
        query: Vector,
        asks: Sequence[Ask],
        also: Sequence[str] = (),
        *,
        refresh: bool = True,
    ) -> Answer:
        """Each search of ``asks`` over the vectors of ``model_id``, and the similarity of each
        id of ``also``: one refresh (unless ``refresh`` is False: the copy was refreshed for the
        same call) and one statement re-scoring them exactly for all of them."""
        q = np.ascontiguousarray(query, dtype=np.float32)
        with self._lock:
            matrix = self._refresh(conn, model_id) if refresh else self._models.get(model_id)
            usable = matrix is not None and matrix.n > 0 and q.shape[0] == matrix.dim
            shortlists = [
                self._shortlist(matrix, model_id, q, a.limit, a.env_ids, a.layers, a.statuses)
                if usable and matrix is not None and a.limit > 0
                else np.zeros(0, dtype=np.int64)
                for a in asks
            ]
        seqs = np.unique(np.concatenate([np.zeros(0, dtype=np.int64), *shortlists]))
        if seqs.size == 0 and not also:
            return Answer([[] for _ in asks], {})
        by_seq: dict[int, Exact] = {}
        scores: dict[str, float] = {}
        for row in exact(conn, model_id, q, seqs.tolist(), also):
            by_seq[row.seq] = row
            scores[row.memory_id] = row.score
        hits = []
        for a, shortlist in zip(asks, shortlists, strict=True):
            # the copy's filter again, on the rows as this statement read them: a memory moved
            # or deleted since the refresh is not returned to a search it no longer matches
            found = [
                (r.memory_id, r.score)
                for r in (by_seq.get(s) for s in shortlist.tolist())
                if r is not None and _matches(r, a)
            ]
            hits.append(sorted(found, key=lambda h: (-h[1], h[0]))[: a.limit])
        wanted = set(also)
        return Answer(hits, {i: s for i, s in scores.items() if i in wanted})

    def _refresh(self, conn: Connection, model_id: str) -> Matrix | None:
        snapshot = self._snapshots.get(model_id)
        matrix = self._models.get(model_id)
        if snapshot is None:
            return self._load(conn, model_id)
        with conn.cursor(binary=True) as cur:
            rows = cur.execute(_CHANGED, {"model": model_id, "snap": snapshot}).fetchall()
        now, epoch = rows[0][0], rows[0][1]
        if epoch != self._epoch:  # vectors were deleted: everything is read again
            return self._load(conn, model_id)
        changed: list[Row] = [r[2:] for r in rows if r[2] is not None]
        if changed:
            if matrix is None:
                matrix = self._models[model_id] = Matrix(changed[0][4])
            self._put(matrix, changed, BIG_ENDIAN)
            matrix.rev += 1
            matrix.fit_projection(self._project_from)
            self.rows_read += len(changed)
        self._snapshots[model_id] = now
        return matrix

    def _load(self, conn: Connection, model_id: str) -> Matrix | None:
        """Every vector of ``model_id``, read in one snapshot (remembered for the next read)."""
        nested = conn.info.transaction_status is not pq.TransactionStatus.IDLE
        with conn.transaction():
            if not nested:  # inside Store.atomic(): its transaction's snapshot, as it is
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            found = conn.execute(f"SELECT pg_current_snapshot()::text, {_EPOCH}").fetchone()
            assert found is not None
            snapshot, epoch = found
            if epoch != self._epoch:
                self._models.clear()
                self._snapshots.clear()
                self._epoch = epoch
            self._models.pop(model_id, None)
            matrix: Matrix | None = None
            read = 0
            with conn.cursor(name="engram_vector_copy", binary=True) as cur:
                cur.itersize = LOAD_CHUNK
                cur.execute(_ALL, (model_id,))
                while chunk := cur.fetchmany(LOAD_CHUNK):
                    read += len(chunk)
                    if matrix is None:
                        matrix = self._models[model_id] = Matrix(chunk[0][4])
                    self._put(matrix, chunk, BIG_ENDIAN)
        if matrix is not None:
            matrix.rev += 1
            matrix.fit_projection(self._project_from)
        self._snapshots[model_id] = snapshot
        self.rows_read += read
        if read >= heap.BULK_ROWS:  # the chunks' rows, freed (engram.heap)
            heap.give_back()
        return matrix


class Exact(NamedTuple):
    """A memory's exact cosine, and where it is as the statement read it."""

    memory_id: str
    seq: int
    score: float
    env_id: str
    layer: str
    status: str


def _matches(row: Exact, ask: Ask) -> bool:
    return (
        (not ask.env_ids or row.env_id in ask.env_ids)
        and (not ask.layers or row.layer in {layer.value for layer in ask.layers})
        and (not ask.statuses or row.status in {status.value for status in ask.statuses})
    )


def exact(
    conn: Connection, model_id: str, query: Vector, seqs: Sequence[int], ids: Sequence[str]
) -> list[Exact]:
    """The memories at ``seqs`` or with ``ids`` that have a vector of ``model_id`` of the
    query's dimension, with pgvector's exact cosines, in one statement."""
    params = (vectors.Embedding(query), list(seqs), list(dict.fromkeys(ids)))
    return [
        Exact(r[0], int(r[1]), float(r[2]), r[3], r[4], r[5])
        for r in conn.execute(exact_statement(model_id, int(query.shape[0])), params).fetchall()
    ]


def exact_statement(model_id: str, dim: int) -> sql.Composed:
    """:func:`exact`'s statement; its parameters: the query vector, the seqs, the ids.

    The memories are found first (by their unique seq or id) and each one's vector is then read
    by its key: a LATERAL subquery that ``OFFSET 0`` keeps from being flattened into a plain
    join. As a plain join, a planner without statistics (a table bulk-loaded since autovacuum
    last analyzed it) took the model's vectors for a few dozen rows and scanned them all, then
    looked each memory up: 370-520 ms a search at 100k memories until autovacuum came."""
    model_cond, dist = vectors.distance(model_id, dim, exact=True)
    return sql.SQL(
        "SELECT m.id, m.seq, 1 - {dist}, m.environment_id, m.layer, m.status "
        "FROM memories m CROSS JOIN LATERAL (SELECT v.embedding FROM memory_vectors v "
        "WHERE v.memory_id = m.id AND {model_cond} OFFSET 0) v "
        "WHERE m.seq = ANY(%s) OR m.id = ANY(%s)"
    ).format(dist=dist, model_cond=model_cond)
