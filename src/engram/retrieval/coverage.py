"""How much of a query a memory's text covers: the share of the query's content words it
contains. BM25 divided by the best score of the query's own results says only "best of these";
multiplied by coverage it says how much of the question was matched, so a memory sharing one
word of a five-word question scores a fifth of one that shares them all, whatever else the
query found.

Which words a memory contains is what the keyword index itself matched (each store stems
words the way its index does, ``Hit.matched``), so a word BM25 counted is never missed here. A
word found only in a memory's keyword context (its neighbouring turns) counts as covered too:
BM25 already weighs the context column at half, and on LoCoMo (``bench.locomo``) counting it in
full lifts hybrid recall@10 from 0.755 to 0.767.
"""

from __future__ import annotations

CONTEXT_SHARE = 1.0


def coverage(query_words: int, own: int, near: int = 0) -> float:
    """The share of a query's ``query_words`` distinct content words that a memory contains:
    ``own`` in its text, ``near`` only in its context (each counting ``CONTEXT_SHARE``); in
    [0, 1], and 1 when the query has no content words."""
    if query_words <= 0:
        return 1.0
    return min(1.0, (own + CONTEXT_SHARE * near) / query_words)
