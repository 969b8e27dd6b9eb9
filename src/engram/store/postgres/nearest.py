"""Vector search on PostgreSQL: several filtered searches for one query vector in one statement.

The HNSW index yields the nearest ``pool`` vectors of the model (a materialised scan, so the
planner cannot trade it for a join over every memory); each search's filter then applies to
each of them by primary key. A filter that passes fewer than ``pool`` memories (an empty layer,
a small environment) is answered by an exact scan of those memories instead, whose cost is what
the filtered set holds; one that passes none costs only the count. The count of memories
passing each filter (up to ``pool``) is a one-time filter of each branch, so only one of them
runs per search, and the index is scanned once for all the searches of a statement (those of
one ``pool``: ``hnsw.ef_search`` is the pool, one setting per statement). The similarities of
the ids a search asks about (its keyword hits) come back in the same round trip.

Before this module, an assembly's three layers cost three statements, each its own HNSW scan
when its filter passed at least the pool, and one more for the keyword hits' similarities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from engram.store.postgres import vectors
from engram.store.postgres.rows import where
from engram.store.protocol import Hit, Vector, VectorQuery

MAX_POOL = 1000


def pool_of(limit: int) -> int:
    """How many nearest vectors the index yields for a search of ``limit``."""
    return min(MAX_POOL, max(2 * limit, 100))


@dataclass(frozen=True)
class Found:
    """What the statement found for one search."""

    passing: int
    """Memories passing the filter, counted up to the pool."""
    nearest: list[tuple[float, int, str]]
    """(distance, seq, id) of its hits, nearest first."""
    scores: dict[str, float]
    """The similarities of the ids it asked about."""


def statement(
    vector: Vector, model_id: str, queries: Sequence[VectorQuery], pool: int
) -> tuple[sql.Composed, list[Any]]:
    """One statement answering ``queries`` (all of pool ``pool``); its rows are
    (query index, passing count or NULL, id, distance or similarity, seq)."""
    dim = int(vector.shape[0])
    literal = vectors.Embedding(vector)
    model_cond, dist = vectors.distance(model_id, dim)
    _, exact_dist = vectors.distance(model_id, dim, exact=True)
    ctes: list[sql.Composable] = []
    bodies: list[sql.Composable] = []
    params: list[Any] = []
    tail: list[Any] = []
    for i, q in enumerate(queries):
        cond, cond_params = where(q.flt)
        passing = sql.Identifier(f"p{i}")
        n = sql.SQL("(SELECT count(*) FROM {})").format(passing)
        # the memories passing the filter, up to the pool: their count chooses the branch, and
        # the exact branch scans them (a plan sized by the pool: a scan of the filter itself
        # was planned for the whole table, in parallel, whose workers started even when the
        # branch did not run: 15 ms a statement at 100k memories)
        ctes.append(
            sql.SQL(
                "{} AS MATERIALIZED (SELECT m.id, m.seq FROM memories m WHERE "
                + cond
                + " LIMIT %s)"
            ).format(passing)
        )
        params += [*cond_params, pool]
        bodies.append(
            sql.SQL(
                "SELECT {i}, {n}, h.id, h.d, h.seq FROM (SELECT 1) one LEFT JOIN LATERAL (("
                "SELECT m.id, nn.d, m.seq FROM nn CROSS JOIN LATERAL "
                "(SELECT m.id, m.seq FROM memories m WHERE m.id = nn.memory_id AND " + cond + " "
                # OFFSET 0: keep the per-row primary-key lookup (never a hash over the table)
                "OFFSET 0) m WHERE {n} >= %s ORDER BY nn.d, m.seq LIMIT %s"
                ") UNION ALL ("
                "SELECT p.id, {exact_dist}, p.seq FROM {passing} p "
                "JOIN memory_vectors v ON v.memory_id = p.id WHERE {n} BETWEEN 1 AND %s "
                "AND {model_cond} ORDER BY {exact_dist}, p.seq LIMIT %s)"
                ") h ON true"
            ).format(
                i=sql.Literal(i),
                n=n,
                passing=passing,
                exact_dist=exact_dist,
                model_cond=model_cond,
            )
        )
        tail += [*cond_params, pool, q.limit, literal, pool - 1, literal, q.limit]
        if q.also:
            bodies.append(
                sql.SQL(
                    "SELECT {i}, NULL, v.memory_id, 1 - {exact_dist}, NULL FROM memory_vectors v "
                    "WHERE {model_cond} AND v.memory_id = ANY(%s)"
                ).format(i=sql.Literal(i), exact_dist=exact_dist, model_cond=model_cond)
            )
            tail += [literal, list(dict.fromkeys(q.also))]
    # the index is scanned once, when some search's filter passes at least the pool
    counts = sql.SQL(", ").join(
        sql.SQL("(SELECT count(*) FROM {})").format(sql.Identifier(f"p{i}"))
        for i in range(len(queries))
    )
    ctes.append(
        sql.SQL(
            "nn AS MATERIALIZED (SELECT v.memory_id, {dist} AS d FROM memory_vectors v "
            "WHERE {model_cond} AND greatest({counts}) >= %s ORDER BY {dist} LIMIT %s)"
        ).format(dist=dist, model_cond=model_cond, counts=counts)
    )
    params += [literal, pool, literal, pool]
    union = sql.SQL(" UNION ALL ").join(sql.SQL("({})").format(b) for b in bodies)
    query = sql.SQL("WITH {} {}").format(sql.SQL(", ").join(ctes), union)
    return query, [*params, *tail]


def found(rows: Sequence[tuple[Any, ...]], queries: Sequence[VectorQuery]) -> list[Found]:
    """The statement's rows, by search."""
    passing = [0] * len(queries)
    nearest: list[list[tuple[float, int, str]]] = [[] for _ in queries]
    scores: list[dict[str, float]] = [{} for _ in queries]
    for i, n, memory_id, d, seq in rows:
        if n is None:  # a similarity asked about
            scores[i][memory_id] = float(d)
            continue
        passing[i] = int(n)
        if memory_id is not None:
            nearest[i].append((d, seq, memory_id))
    return [Found(passing[i], sorted(nearest[i]), scores[i]) for i in range(len(queries))]


def exact(vector: Vector, model_id: str, q: VectorQuery) -> tuple[sql.Composed, list[Any]]:
    """An exact scan of what a filter passes: for a search whose filter left too few of the
    nearest ``pool`` (rows: similarity, seq, id)."""
    dim = int(vector.shape[0])
    literal = vectors.Embedding(vector)
    model_cond, exact_dist = vectors.distance(model_id, dim, exact=True)
    cond, params = where(q.flt)
    query = sql.SQL(
        "SELECT 1 - {dist}, m.seq, m.id FROM memory_vectors v "
        "JOIN memories m ON m.id = v.memory_id "
        "WHERE {model_cond} AND " + cond + " ORDER BY {dist}, m.seq LIMIT %s"
    ).format(dist=exact_dist, model_cond=model_cond)
    return query, [literal, *params, literal, q.limit]


def hits(f: Found) -> list[Hit]:
    return [Hit(i, 1 - float(d)) for d, _, i in f.nearest]
