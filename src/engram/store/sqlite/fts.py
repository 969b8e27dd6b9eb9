"""The keyword index: an FTS5 table kept in the same transaction as the memories.

Columns: ``text`` (what is also embedded), ``context`` (keyword-only context such as
neighbouring conversation turns, weighted lower) and ``scope`` (an environment token and a layer
token), so that a query is narrowed to one environment and layer inside the index rather than
after ranking every match.

Terms that occur in more than half of the indexed rows are dropped from a query: BM25 gives them
an IDF of about zero, so they change no ranking, but matching them would make FTS5 score every
row (the difference between 3 ms and 300 ms at 100k memories). Beyond that, the rarest terms are
kept until ``term_budget.POSTINGS_BUDGET`` matching rows: a bound on the cost of one keyword
query, which only bites on large stores (the semantic stream still sees the whole query).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from functools import lru_cache

from engram.hashed import HashedMemo
from engram.models import (
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    ProcedureDetails,
    search_text,
)
from engram.store.term_budget import COMMON_SHARE, rarest_first
from engram.text import content_words, words

CONTEXT_WEIGHT = 0.5
"""BM25 weight of the keyword-only context column, relative to the memory's own text."""
MIN_ROWS_FOR_PRUNING = 1000
# FTS5 scores every row that matches any term, ~3 µs each: see term_budget for the bound

TOKENIZE = "porter unicode61 remove_diacritics 2"

SCOPED_FTS_STATEMENTS = (
    "DROP TABLE memories_fts",
    f"""CREATE VIRTUAL TABLE memories_fts USING fts5(
        text, context, scope, tokenize = '{TOKENIZE}'
    )""",
    # per-term document counts, read to drop too-common terms from a query
    "CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, 'row')",
)

_NON_ALNUM = re.compile(r"[^0-9a-z]")


def env_token(environment_id: str) -> str:
    return "e" + _NON_ALNUM.sub("", environment_id.lower())


def layer_token(layer: Layer) -> str:
    return "l" + layer.value


def scope(memory: Memory) -> str:
    return f"{env_token(memory.environment_id)} {layer_token(memory.layer)}"


def index(conn: sqlite3.Connection, seq: int, memory: Memory, *, replace: bool = True) -> None:
    """(Re)write one memory's index row (``replace=False``: it has none yet)."""
    if replace:
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (seq,))
    _insert(conn, seq, memory.search_text(), memory.keyword_context, scope(memory))


def _insert(conn: sqlite3.Connection, seq: int, text: str, context: str, scope: str) -> None:
    conn.execute(
        "INSERT INTO memories_fts (rowid, text, context, scope) VALUES (?, ?, ?, ?)",
        (seq, text, context, scope),
    )


def reindex_all(conn: sqlite3.Connection) -> None:
    # a migration step: read only the columns the index needs, as they were when it was
    # written (later migrations add columns that the full row mapping expects)
    rows = conn.execute(
        "SELECT seq, environment_id, layer, content, details, keyword_context FROM memories"
    ).fetchall()
    for seq, env_id, layer_value, content, details, context in rows:
        layer = Layer(layer_value)
        episode = procedure = None
        if details and layer is Layer.EPISODE:
            episode = EpisodeDetails.model_validate_json(details)
        elif details and layer is Layer.PROCEDURE:
            procedure = ProcedureDetails.model_validate_json(details)
        text = search_text(content, episode, procedure)
        _insert(conn, seq, text, context, f"{env_token(env_id)} {layer_token(layer)}")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _any(column: str, tokens: Sequence[str]) -> str:
    return f"{column} : ({' OR '.join(_quote(t) for t in tokens)})"


_local = threading.local()


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A word's index term, as this very tokenizer makes it (porter stem, folded), using a
    private in-memory FTS5 table: no second stemmer that could disagree with the index."""
    conn: sqlite3.Connection | None = getattr(_local, "stemmer", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE s USING fts5(x, tokenize = '{TOKENIZE}')")
        conn.execute("CREATE VIRTUAL TABLE sv USING fts5vocab(s, 'instance')")
        _local.stemmer = conn
    conn.execute("DELETE FROM s")
    conn.execute("INSERT INTO s (rowid, x) VALUES (1, ?)", (word,))
    row = conn.execute("SELECT term FROM sv ORDER BY offset LIMIT 1").fetchone()
    return str(row[0]) if row else word


def _stems(words: Sequence[str]) -> dict[str, str]:
    return {w: _stem(w) for w in words}


def _stems_of(text: str) -> str:
    """A text's distinct index terms, each between spaces (``" alic prefer "``): a quarter of
    a frozenset's size, and a term is looked up as a substring (terms hold no spaces)."""
    return " " + " ".join(dict.fromkeys(_stem(w) for w in words(text))) + " "


_text_stems = HashedMemo(_stems_of, maxsize=20_000)
"""The stems of recent memory texts and contexts (keyword hits recur across queries)."""


def query_marks(query_words: Sequence[str]) -> dict[str, str]:
    """Each query word's index term between spaces, as ``matched`` looks for it (once per
    query, not once per hit)."""
    return {w: f" {stem} " for w, stem in _stems(query_words).items()}


def matched(
    marks: dict[str, str], text: str, context: str
) -> tuple[frozenset[str], frozenset[str]]:
    """The query words (``marks``: from ``query_marks``) the index finds in ``text``, and those
    it finds only in ``context``."""
    own, near = _text_stems(text), _text_stems(context) if context else ""
    found = frozenset(w for w, term in marks.items() if term in own)
    return found, frozenset(w for w, term in marks.items() if term in near) - found


class TermCounts:
    """Documents per index term, from the fts5vocab table. Counting reads the term's whole
    doclist, so counts are cached (one cache per store) until the index grows or shrinks by a
    tenth: only their order of magnitude matters here."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def get(self, conn: sqlite3.Connection, keys: Sequence[str], rows: int) -> dict[str, int]:
        out: dict[str, int] = {}
        for key in dict.fromkeys(keys):
            cached = self._cache.get(key)
            if cached is not None and abs(rows - cached[1]) <= rows // 10:
                out[key] = cached[0]
                continue
            # equality is answered from the index; 'term IN (...)' reads every doclist
            sql = "SELECT doc FROM memories_fts_vocab WHERE term = ?"
            row = conn.execute(sql, (key,)).fetchone()
            out[key] = int(row[0]) if row is not None else 0
            with self._lock:
                if len(self._cache) > 100_000:
                    self._cache.clear()
                self._cache[key] = (out[key], rows)
        return out


def query_terms(conn: sqlite3.Connection, text: str) -> list[str]:
    """The query's content words, minus those too common to rank by (see module doc)."""
    return plan(conn, text, MemoryFilter(statuses=[]), TermCounts())[0]


def plan(
    conn: sqlite3.Connection,
    text: str,
    flt: MemoryFilter,
    counts: TermCounts,
    also: Sequence[str] = (),
) -> tuple[list[str], str]:
    """The terms to search for and the MATCH expression: any of the terms in text or context,
    narrowed to the filter's environments and layers when that narrows much (a scope token in
    most rows would only make FTS5 walk its long doclist; the SQL filter applies anyway).
    Every term is quoted: user text never becomes query syntax. ``also``: further words
    (not in ``text``), kept within the budget the text's own terms leave."""
    terms = list(dict.fromkeys(content_words(text)))
    if not terms:
        return [], ""
    extra = [w for w in also if w not in terms]
    envs = [env_token(e) for e in flt.environment_ids]
    layers = [layer_token(layer) for layer in flt.layers]
    stems = _stems([*terms, *extra])
    total = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories_fts").fetchone()[0]
    docs = counts.get(conn, [*envs, *layers, *stems.values()], total)
    kept = [*terms, *extra]
    if len(kept) > 1 and total >= MIN_ROWS_FOR_PRUNING:
        frequency = {term: docs.get(stems[term], 0) for term in kept}
        kept = rarest_first(terms, frequency, total * COMMON_SHARE, also=extra)
    parts = [_any("{text context}", kept)]
    for tokens in (envs, layers):
        if tokens and sum(docs.get(t, 0) for t in tokens) < total * COMMON_SHARE:
            parts.append(_any("scope", tokens))
    return kept, " AND ".join(parts)


def rank_expression() -> str:
    return f"bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}, 0.0)"
