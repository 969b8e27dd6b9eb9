"""Planning a keyword query for PostgreSQL: which of the query's terms to search for.

Ranking with ``ts_rank_cd`` costs one call per matching row, so a term found in most memories
(a speaker's name, "service" in every line) makes a query rank the whole table: 40 ms at 10k
memories, half a second at 100k. As in the SQLite store, terms are taken rarest first, up to a
budget of postings, and a term in half the memories or more is dropped when a rarer one is
left (it cannot separate memories anyway). Term frequencies are counted through the GIN
index, capped at the budget, and cached per process for a few minutes. A table that has grown
far past its planner statistics (a bulk load before autovacuum's pass) is analyzed first.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from engram.store.postgres import vectors
from engram.store.postgres.db import Connection
from engram.store.postgres.rows import FILTER_COLUMNS
from engram.store.protocol import Vector
from engram.store.term_budget import COMMON_SHARE, POSTINGS_BUDGET, rarest_first

MIN_ROWS_FOR_PRUNING = 2000
CACHE_SECONDS = 300.0

log = logging.getLogger(__name__)

# each term's english tsquery (stemmed; a stopword's is empty) and its lexemes; with a cap,
# also how many memories its query matches (up to the cap): planning a query of new words
# costs one round trip
_TERMS = (
    "SELECT t, CASE WHEN numnode(q) > 0 THEN q::text END, "
    "tsvector_to_array(to_tsvector('english', t)), CASE WHEN numnode(q) > 0 AND %s > 0 THEN "
    "(SELECT count(*) FROM (SELECT 1 FROM memories WHERE tsv @@ q LIMIT %s) AS s) END "
    "FROM unnest(%s::text[]) AS t, plainto_tsquery('english', t) AS q"
)
MAX_CACHED_TERMS = 100_000
_DOCS = "SELECT count(*) FROM (SELECT 1 FROM memories WHERE tsv @@ %s::tsquery LIMIT %s) AS s"


@dataclass(frozen=True)
class Term:
    """What the english configuration makes of one query word (fixed: cached for good)."""

    tsquery: str | None
    """Its tsquery text; None for a stopword."""
    lexemes: frozenset[str]


class TermFrequencies:
    """Capped document counts per term query, cached for ``CACHE_SECONDS``, and each word's
    :class:`Term` (so a query of known words costs no round trip to plan)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, tuple[int, float]] = {}
        self._total: tuple[int, float] = (0, 0.0)
        self._terms: dict[str, Term] = {}

    def terms(self, conn: Connection, words: list[str], cap: int = 0) -> dict[str, Term]:
        """Each word's :class:`Term`; with ``cap``, the words not known yet have their
        queries' document counts (up to ``cap``) cached as well, in the same round trip."""
        with self._lock:
            found = {w: self._terms[w] for w in words if w in self._terms}
        missing = [w for w in words if w not in found]
        if missing:
            rows = conn.execute(_TERMS, (cap, cap, missing)).fetchall()
            fresh = {r[0]: Term(r[1], frozenset(r[2])) for r in rows}
            found.update(fresh)
            now = time.monotonic()
            with self._lock:
                if len(self._terms) > MAX_CACHED_TERMS:
                    self._terms.clear()
                self._terms.update(fresh)
                for r in rows:
                    if r[1] is not None and r[3] is not None:
                        self._cache_docs(r[1], int(r[3]), now)
        return found

    def total(self, conn: Connection) -> int:
        now = time.monotonic()
        with self._lock:
            value, at = self._total
        if now - at < CACHE_SECONDS:
            return value
        row = conn.execute(
            "SELECT count(*), (SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass) "
            "FROM memories"
        ).fetchone()
        value = int(row[0]) if row else 0
        estimate = float(row[1]) if row and row[1] is not None else -1.0
        if value >= MIN_ROWS_FOR_PRUNING and (estimate < 0 or value > 2 * estimate + 1000):
            _analyze(conn)
        with self._lock:
            self._total = (value, now)
        return value

    def docs(self, conn: Connection, query: str, cap: int) -> int:
        now = time.monotonic()
        with self._lock:
            cached = self._docs.get(query)
        if cached is not None and now - cached[1] < CACHE_SECONDS:
            return cached[0]
        row = conn.execute(_DOCS, (query, cap)).fetchone()
        value = int(row[0]) if row else 0
        with self._lock:
            self._cache_docs(query, value, now)
        return value

    def _cache_docs(self, query: str, value: int, now: float) -> None:
        if len(self._docs) > 50_000:
            self._docs.clear()
        self._docs[query] = (value, now)


@dataclass(frozen=True)
class Plan:
    tsquery: str
    """The kept terms' queries, ORed."""
    bounded: bool
    """The terms are known to match at most ``POSTINGS_BUDGET`` memories in all: the search
    may read every match through the GIN index, whatever the rest of the filter."""


def _analyze(conn: Connection) -> None:
    """Statistics for the planner after a bulk load, before autovacuum has come by: without
    them it takes the table for tiny and scans it instead of using the GIN index (7 ms per
    query at 10k memories, growing with the table). Skipped if the role may not analyze."""
    try:
        conn.execute("ANALYZE memories")
    except psycopg.Error as exc:
        log.info("ANALYZE memories skipped: %s", exc)


def plan(
    conn: Connection, terms: list[str], frequencies: TermFrequencies, also: Sequence[str] = ()
) -> Plan | None:
    """What to search for, or None if no term is left (stopwords only). ``also``: further
    words, kept within the budget ``terms`` leave (``term_budget.rarest_first``)."""
    total = frequencies.total(conn)  # cached: no round trip most of the time
    cap = min(POSTINGS_BUDGET + 1, max(1, int(total * COMMON_SHARE)))
    pruning = total >= MIN_ROWS_FOR_PRUNING
    known = frequencies.terms(conn, [*terms, *also], cap if pruning else 0)
    queries = list(dict.fromkeys(q for t in terms if (q := known[t].tsquery) is not None))
    if not queries:
        return None
    extra = [q for t in also if (q := known[t].tsquery) is not None and q not in queries]
    extra = list(dict.fromkeys(extra))
    if not pruning:
        return Plan(_or([*queries, *extra]), bounded=True)
    df = {q: frequencies.docs(conn, q, cap) for q in [*queries, *extra]}
    kept = rarest_first(queries, df, cap, also=extra)
    # a count that reached the cap is a lower bound: such a term may match many more
    bounded = sum(df[q] for q in kept) <= POSTINGS_BUDGET and all(df[q] < cap for q in kept)
    return Plan(_or(kept), bounded=bounded)


def _or(queries: list[str]) -> str:
    return " | ".join(f"({q})" for q in queries)


def search(
    planned: Plan, cond: str, near: tuple[Vector, str] | None
) -> tuple[sql.Composed, list[Any]]:
    """The keyword statement of ``planned`` over the memories passing ``cond`` (its parameters
    and the limit follow the returned ones): rows of id, score, layer, own lexemes, context
    lexemes and, with ``near`` (a query vector and its model), the hit's similarity to it (NULL
    without a vector of the model)."""
    # few matches in all: read them through the GIN index (OFFSET 0 keeps the planner from
    # trading that for a scan of the filter's rows, its choice without statistics); the
    # matches' columns the ranking and the filter read (not the whole rows)
    cols = ", ".join(("tsv", "keyword_text", "keyword_context", "seq", *FILTER_COLUMNS))
    source = (
        f"(SELECT {cols} FROM memories WHERE tsv @@ %s::tsquery OFFSET 0) m"
        if planned.bounded
        else f"(SELECT {cols} FROM memories WHERE tsv @@ %s::tsquery) m"
    )
    similarity: sql.Composable = sql.SQL("NULL::float8")
    joined: sql.Composable = sql.SQL("")
    first: list[Any] = []
    if near is not None:
        vector, model_id = near
        model_cond, dist = vectors.distance(model_id, int(vector.shape[0]), exact=True)
        similarity = sql.SQL("1 - {}").format(dist)
        joined = sql.SQL(" LEFT JOIN memory_vectors v ON v.memory_id = t.id AND {}").format(
            model_cond
        )
        first.append(vectors.Embedding(vector))
    # own text and context lexemes of the hits kept (not of every row the sort sees); without
    # context the own text is the whole keyword text, whose lexemes the stored tsvector holds
    # already (no parsing)
    query = sql.Composed(
        [
            sql.SQL(
                "SELECT t.id, t.score, t.layer, CASE WHEN t.keyword_context = '' "
                "THEN tsvector_to_array(t.tsv) ELSE tsvector_to_array(to_tsvector('english', "
                "left(t.keyword_text, length(t.keyword_text) - length(t.keyword_context) - 1))) "
                "END, CASE WHEN t.keyword_context = '' THEN '{}'::text[] "
                "ELSE tsvector_to_array(to_tsvector('english', t.keyword_context)) END, "
            ),
            similarity,
            sql.SQL(
                " FROM (SELECT m.id, ts_rank_cd(m.tsv, %s::tsquery) AS score, m.layer, "
                f"m.keyword_text, m.keyword_context, m.seq, m.tsv FROM {source} WHERE {cond} "
                "ORDER BY 2 DESC, m.seq DESC LIMIT %s) t"
            ),
            joined,
            sql.SQL(" ORDER BY t.score DESC, t.seq DESC"),
        ]
    )
    return query, [*first, planned.tsquery, planned.tsquery]
