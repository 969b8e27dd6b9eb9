"""Which of a query's terms a keyword search matches on, for both stores: the rarest first,
within a budget of postings, and none that most rows contain (when a rarer one is left).

A term in half the rows or more cannot separate memories (BM25 gives it an IDF near zero) yet
makes the index score every row it is in; the budget bounds what one query can cost on a large
store. The rarest term is always kept.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

COMMON_SHARE = 0.5
"""A term in this share of the rows or more is common."""
POSTINGS_BUDGET = 2500
"""At most this many matching rows are scored per query."""

T = TypeVar("T", bound=Hashable)


def rarest_first(
    terms: Sequence[T], docs: Mapping[T, int], common_at: float, also: Sequence[T] = ()
) -> list[T]:
    """The terms to keep, in their query order: the rarest first while their document counts
    (``docs``) stay within ``POSTINGS_BUDGET`` and below ``common_at`` rows. ``also``: terms
    the query's own words suggest (another form of a word, the values of a kind it names),
    kept, rarest first, only within what budget the query's own terms leave."""
    chosen: set[T] = set()
    postings = 0
    for term in sorted(terms, key=lambda t: docs[t]):
        df = docs[term]
        if chosen and (df >= common_at or postings + df > POSTINGS_BUDGET):
            break
        chosen.add(term)
        postings += df
    for term in sorted((t for t in also if t not in chosen), key=lambda t: docs[t]):
        df = docs[term]
        if df >= common_at or postings + df > POSTINGS_BUDGET:
            break
        chosen.add(term)
        postings += df
    return [t for t in dict.fromkeys([*terms, *also]) if t in chosen]
