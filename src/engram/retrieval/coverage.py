"""How much of a query a memory's text covers: the share of the query's content words it
contains. BM25 divided by the best score of the query's own results says only "best of these";
multiplied by coverage it says how much of the question was matched, so a memory sharing one
word of a five-word question scores a fifth of one that shares them all, whatever else the
query found.

Words are compared after a light suffix strip (plural, -ing, -ed, -ly), the way the keyword
indexes stem them; a word found only in a memory's keyword context (its neighbouring turns)
counts half.
"""

from __future__ import annotations

from functools import lru_cache

from engram.text import content_words

_SUFFIXES = ("ings", "ing", "edly", "ed", "ly", "s")
CONTEXT_SHARE = 0.5


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    # "lives", "lived", "living" and "live" meet at "liv"
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


@lru_cache(maxsize=20_000)
def terms(text: str) -> frozenset[str]:
    """The stemmed content words of ``text``."""
    return frozenset(stem(w) for w in content_words(text))


def coverage(query_terms: frozenset[str], text: str, context: str = "") -> float:
    """The share of ``query_terms`` found in ``text`` (a word only in ``context`` counts
    ``CONTEXT_SHARE``), in [0, 1]; 1 when the query has no content words."""
    if not query_terms:
        return 1.0
    own = terms(text) & query_terms
    near = (terms(context) & query_terms) - own if context else frozenset()
    return (len(own) + CONTEXT_SHARE * len(near)) / len(query_terms)
