"""Keyword search over the FTS5 index, at a cost that does not grow with the store.

The index ranks its matches by BM25 alone (``fts.plan`` keeps the rarest terms within a budget
of postings, so it scores at most a few thousand rows); only the best ``OVERFETCH`` times the
limit are then looked up in ``memories`` and checked against the filter. Joining first would
read the memory row of every match (a random B-tree lookup each, about 7 µs at a million
memories: 11 of the 17 ms of a 1,600-match query). When too few of them pass the filter (a
filter the index cannot narrow: a status, a category, dates), the search is asked again with
the filter inside, as before: the same hits either way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from engram.models import Layer, MemoryFilter
from engram.store.protocol import Hit
from engram.store.sqlite import fts
from engram.store.sqlite.rows import where
from engram.text import content_words

OVERFETCH = 2
"""Matches ranked by the index per hit asked for, before the filter is checked."""


def search(
    conn: sqlite3.Connection,
    counts: fts.TermCounts,
    query: str,
    flt: MemoryFilter,
    *,
    limit: int,
    also: Sequence[str] = (),
) -> list[Hit]:
    """The best ``limit`` memories passing ``flt`` by BM25, with the query words (and words of
    ``also``) each matched."""
    own = list(dict.fromkeys(content_words(query)))
    extra = [w for w in dict.fromkeys(content_words(" ".join(also))) if w not in own]
    terms, match = fts.plan(conn, query, flt, counts, also=extra)
    if not terms or limit <= 0:
        return []
    cond, params = where(flt)
    rank = fts.rank_expression()
    want = OVERFETCH * limit
    # the index's best matches first, then their memories; the texts only for the hits kept
    rows = conn.execute(
        "SELECT m.id, t.score, f.text, f.context, m.layer FROM ("
        f"SELECT rowid AS seq, -{rank} AS score FROM memories_fts "
        f"WHERE memories_fts MATCH ? ORDER BY {rank} LIMIT ?"
        f") t CROSS JOIN memories m ON m.seq = t.seq JOIN memories_fts f ON f.rowid = t.seq "
        f"WHERE {cond} ORDER BY t.score DESC LIMIT ?",
        [match, want, *params, limit],
    ).fetchall()
    if len(rows) < limit and _matches_beyond(conn, match, want):
        rows = _filtered_inside(conn, match, cond, params, limit)
    return _hits([*own, *extra], rows)


def _matches_beyond(conn: sqlite3.Connection, match: str, want: int) -> bool:
    """Whether the index has more than ``want`` matches (so some were not checked)."""
    sql = "SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT 1 OFFSET ?"
    return conn.execute(sql, (match, want)).fetchone() is not None


def _filtered_inside(
    conn: sqlite3.Connection, match: str, cond: str, params: list[Any], limit: int
) -> list[Any]:
    """Every match joined to its memory and filtered before ranking (a selective filter)."""
    rank = fts.rank_expression()
    return conn.execute(
        "SELECT t.id, t.score, f.text, f.context, t.layer FROM ("
        f"SELECT m.id AS id, -{rank} AS score, m.layer AS layer, memories_fts.rowid AS seq "
        "FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {cond} ORDER BY {rank} LIMIT ?"
        ") t JOIN memories_fts f ON f.rowid = t.seq ORDER BY t.score DESC",
        [match, *params, limit],
    ).fetchall()


def _hits(query_words: list[str], rows: Sequence[Any]) -> list[Hit]:
    marks = fts.query_marks(query_words)
    return [Hit(r[0], float(r[1]), *fts.matched(marks, r[2], r[3]), Layer(r[4])) for r in rows]
