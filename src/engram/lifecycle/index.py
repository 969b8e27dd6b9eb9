"""The candidate index: the active facts of one environment by content word, in memory.

A write looks up the facts it may duplicate or contradict with a few dictionary hits instead of
a keyword query on the store: every fact sharing one of the new text's lookup terms (see
:func:`engram.lifecycle.claims.lookup_terms`) scores the rarity of each term it shares, and the
best ``limit`` are returned, each with its Jaccard index against the new text. A term held by
more than ``COMMON`` facts ("prefers", a project's name in a big environment) only adds to the
score of facts a rarer term found, so a lookup costs about the postings of its rare terms.

An entry is the fact's text, importance and pin (:class:`~engram.store.protocol.MemoryText`,
read cheaply for a whole environment) or a whole :class:`~engram.models.Memory` the write path
put there; a caller that acts on a candidate reads the whole memory itself.

Pure data: :class:`engram.service.fact_index.FactIndexes` builds it from the store and keeps
it in step with writes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from heapq import nlargest
from operator import itemgetter

from engram.lifecycle.dedup import Candidate, Fact, fact_words, jaccard, word_set
from engram.models import Layer, Memory, Status
from engram.store.protocol import MemoryText

COMMON = 256
"""Postings from which a term only re-scores facts that rarer terms found."""
PARTIAL_SORT = 2000
"""Scored facts from which the best are picked with a heap rather than by sorting them all
(below it sorting is faster)."""


_Entry = tuple[str, float, bool, tuple[str, ...]]
"""A fact's text, importance, pin and distinct words: plain values in plain tuples, which the
garbage collector stops tracking, so an index of 100k facts adds nothing to its full passes."""


class CandidateIndex:
    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        """``facts``: active facts (each entered as it is, unchecked)."""
        self._facts: dict[str, _Entry] = {}
        self._whole: dict[str, Memory] = {}
        """The facts entered as whole memories (by the write path), handed out as they are."""
        self._by_word: dict[str, set[str]] = {}
        self._norm: dict[str, float] = {}
        """Per fact: the length norm a lookup subtracts from its first term's weight."""
        self._enter_all(facts)

    def _enter_all(self, facts: Iterable[Fact]) -> None:
        """:meth:`_enter` for many facts at once (the same postings, in the same order), each
        distinct text read into words once."""
        entries, norm, whole = self._facts, self._norm, self._whole
        by_word: defaultdict[str, set[str]] = defaultdict(set)
        by_word.update(self._by_word)
        seen: dict[str, tuple[str, ...]] = {}
        for f in facts:
            words = seen.get(f.content)
            if words is None:
                words = seen[f.content] = tuple(fact_words(f.content))
            entries[f.id] = (f.content, f.importance, f.pinned, words)
            norm[f.id] = 1e-6 * len(words)
            if isinstance(f, Memory):
                whole[f.id] = f
            for w in words:
                by_word[w].add(f.id)
        self._by_word = dict(by_word)

    def __len__(self) -> int:
        return len(self._facts)

    def _fact(self, memory_id: str, entry: _Entry) -> Fact:
        whole = self._whole.get(memory_id)
        return whole if whole is not None else MemoryText(memory_id, *entry[:3])

    def get(self, memory_id: str) -> tuple[Fact, frozenset[str]] | None:
        """The fact and its word set."""
        entry = self._facts.get(memory_id)
        return None if entry is None else (self._fact(memory_id, entry), frozenset(entry[3]))

    def put(self, memory: Memory, words: frozenset[str] | None = None) -> None:
        """Index the memory's current state: an active fact is (re)indexed, anything else
        leaves the index. ``words``: its :func:`word_set`, if the caller has it."""
        self.remove(memory.id)
        if memory.layer is not Layer.FACT or memory.status is not Status.ACTIVE:
            return
        self._enter(memory, word_set(memory.content) if words is None else words)

    def _enter(self, fact: Fact, words: frozenset[str]) -> None:
        self._facts[fact.id] = (fact.content, fact.importance, fact.pinned, tuple(words))
        if isinstance(fact, Memory):
            self._whole[fact.id] = fact
        self._norm[fact.id] = 1e-6 * len(words)
        by_word = self._by_word
        for w in words:
            ids = by_word.get(w)
            if ids is None:
                by_word[w] = {fact.id}
            else:
                ids.add(fact.id)

    def remove(self, memory_id: str) -> None:
        old = self._facts.pop(memory_id, None)
        if old is None:
            return
        del self._norm[memory_id]
        self._whole.pop(memory_id, None)
        for w in old[3]:
            ids = self._by_word.get(w)
            if ids is not None:
                ids.discard(memory_id)
                if not ids:
                    del self._by_word[w]

    def lookup(
        self, terms: Iterable[str], words: frozenset[str], limit: int
    ) -> list[Candidate[Fact]]:
        """The ``limit`` facts sharing the most (and rarest) of ``terms``, as candidates scored
        by Jaccard against ``words`` (the new text's word set)."""
        by_word, norm = self._by_word, self._norm
        if not by_word:
            return []
        postings = sorted((ids for t in dict.fromkeys(terms) if (ids := by_word.get(t))), key=len)
        if not postings:
            return []
        first = postings[0]
        weight = 1.0 / math.log(2.0 + len(first))
        # ties go to the shorter fact, as a keyword ranking's length norm would
        scores = {i: weight - norm[i] for i in first}
        for ids in postings[1:]:
            weight = 1.0 / math.log(2.0 + len(ids))
            if len(ids) <= COMMON:
                get = scores.get
                for i in ids:
                    score = get(i)
                    scores[i] = weight - norm[i] if score is None else score + weight
            else:  # only re-score: each found fact holding the term gains its weight once
                for i in ids.intersection(scores):
                    scores[i] += weight
        ranked = scores.items()
        if len(scores) > PARTIAL_SORT:  # the same order as sorting all, at a fraction of the cost
            best = nlargest(limit, ranked, key=itemgetter(1))
        else:
            best = sorted(ranked, key=itemgetter(1), reverse=True)[:limit]
        facts, whole = self._facts, self._whole
        out: list[Candidate[Fact]] = []
        for i, _ in best:
            content, importance, pinned, w = facts[i]
            f: Fact = whole.get(i) or MemoryText(i, content, importance, pinned)
            out.append(Candidate(f, jaccard(words, w)))
        return out
