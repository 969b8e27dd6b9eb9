"""The candidate index: the active facts of one environment by content word, in memory.

A write looks up the facts it may duplicate or contradict with a few array operations instead
of a keyword query on the store: every fact sharing one of the new text's lookup terms (see
:func:`engram.lifecycle.claims.lookup_terms`) scores the rarity of each term it shares, and the
best ``limit`` are returned, each with its Jaccard index against the new text. A term held by
more than ``COMMON`` facts ("prefers", a project's name in a big environment) only adds to the
score of facts a rarer term found, so a lookup costs about the postings of its rare terms.

Each fact has an integer slot; a word's postings are the slots of the facts holding it, in the
order they were entered (an ``array`` of 64-bit integers, read by numpy without a copy), so a
lookup scores its terms' postings in C rather than fact by fact. A removed fact's slot is marked
dead and skipped (a word's weight counts its live facts alone); a word's postings are compacted
once more than half of them are dead.

An entry is the fact's text, importance and pin (:class:`~engram.store.protocol.MemoryText`,
read cheaply for a whole environment) or a whole :class:`~engram.models.Memory` the write path
put there; a caller that acts on a candidate reads the whole memory itself.

Pure data: :class:`engram.service.fact_index.FactIndexes` builds it from the store and keeps
it in step with writes.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from engram.lifecycle.dedup import Candidate, Fact, fact_words, word_set
from engram.models import Layer, Memory, Status

COMMON = 256
"""Postings from which a term only re-scores facts that rarer terms found."""
NORM = 1e-6
"""Per word of a fact, subtracted from its score: ties go to the shorter fact, as a keyword
ranking's length norm would."""

_tuple = tuple.__new__

_Entry = tuple[Fact, tuple[str, ...]]
"""A fact (its :class:`MemoryText`, or the whole memory the write path put there) and its
distinct words."""


class _Postings:
    """The slots holding one word, oldest first (dead ones included until compacted)."""

    __slots__ = ("live", "slots")

    def __init__(self) -> None:
        self.slots = array("q")
        self.live = 0


class CandidateIndex:
    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        """``facts``: active facts (each entered as it is, unchecked)."""
        self._slot: dict[str, int] = {}
        self._entries: list[_Entry | None] = []
        self._by_word: dict[str, _Postings] = {}
        self._alive = np.zeros(0, dtype=np.bool_)
        self._norm = np.zeros(0, dtype=np.float64)
        self._enter_all(facts)

    def _enter_all(self, facts: Iterable[Fact]) -> None:
        """:meth:`_enter` for many facts at once: each distinct text read into words once, a
        word's new slots gathered in a list and added to its postings in one step, the slots'
        liveness and norms set in one step each."""
        seen: dict[str, tuple[str, ...]] = {}
        entries, slot_of = self._entries, self._slot
        start = slot = len(entries)
        gathered: dict[str, list[int]] = {}
        norms: list[float] = []
        for f in facts:
            words = seen.get(f.content)
            if words is None:
                words = seen[f.content] = tuple(fact_words(f.content))
            entries.append((f, words))
            slot_of[f.id] = slot
            norms.append(NORM * len(words))
            for w in words:
                held = gathered.get(w)
                if held is None:
                    gathered[w] = [slot]
                else:
                    held.append(slot)
            slot += 1
        self._grow(slot)
        self._alive[start:slot], self._norm[start:slot] = True, norms
        by_word = self._by_word
        for w, held in gathered.items():
            postings = by_word.get(w)
            if postings is None:
                postings = by_word[w] = _Postings()
            postings.slots.extend(held)
            postings.live += len(held)

    def _grow(self, need: int) -> None:
        if need <= len(self._alive):
            return
        size = max(need, 2 * len(self._alive), 64)
        alive, norm = np.zeros(size, dtype=np.bool_), np.zeros(size, dtype=np.float64)
        alive[: len(self._alive)], norm[: len(self._norm)] = self._alive, self._norm
        self._alive, self._norm = alive, norm

    def __len__(self) -> int:
        return len(self._slot)

    def get(self, memory_id: str) -> tuple[Fact, frozenset[str]] | None:
        """The fact and its word set."""
        slot = self._slot.get(memory_id)
        entry = None if slot is None else self._entries[slot]
        return None if entry is None else (entry[0], frozenset(entry[1]))

    def put(self, memory: Memory, words: frozenset[str] | None = None) -> None:
        """Index the memory's current state: an active fact is (re)indexed, anything else
        leaves the index. ``words``: its :func:`word_set`, if the caller has it."""
        if memory.layer is not Layer.FACT or memory.status is not Status.ACTIVE:
            self.remove(memory.id)
            return
        slot = self._slot.get(memory.id)
        entry = None if slot is None else self._entries[slot]
        if slot is not None and entry is not None and entry[0].content == memory.content:
            self._entries[slot] = (memory, entry[1])  # the same words: the same postings
            return
        self.remove(memory.id)
        self._grow(len(self._entries) + 1)
        self._enter(memory, tuple(word_set(memory.content) if words is None else words))

    def _enter(self, fact: Fact, words: tuple[str, ...]) -> None:
        slot = len(self._entries)
        self._entries.append((fact, words))
        self._slot[fact.id] = slot
        self._alive[slot], self._norm[slot] = True, NORM * len(words)
        by_word = self._by_word
        for w in words:
            postings = by_word.get(w)
            if postings is None:
                postings = by_word[w] = _Postings()
            postings.slots.append(slot)
            postings.live += 1

    def remove(self, memory_id: str) -> None:
        slot = self._slot.pop(memory_id, None)
        if slot is None:
            return
        entry = self._entries[slot]
        self._entries[slot] = None
        self._alive[slot] = False
        if entry is None:
            return
        for w in entry[1]:
            postings = self._by_word[w]
            postings.live -= 1
            if not postings.live:
                del self._by_word[w]
            elif len(postings.slots) > 2 * postings.live + 16:
                alive = self._alive
                postings.slots = array("q", (s for s in postings.slots if alive[s]))

    def lookup(
        self, terms: Iterable[str], words: frozenset[str], limit: int
    ) -> list[Candidate[Fact]]:
        """The ``limit`` facts sharing the most (and rarest) of ``terms``, as candidates scored
        by Jaccard against ``words`` (the new text's word set); of equal scores the fact entered
        last first."""
        by_word = self._by_word
        found = sorted(
            (p for t in dict.fromkeys(terms) if (p := by_word.get(t)) is not None),
            key=lambda p: p.live,
        )
        if not found or limit <= 0:
            return []
        rare = [p for p in found if p.live <= COMMON] or found[:1]
        common = found[len(rare) :]
        slots, scores = _scores(rare)
        for p in common:  # only re-score: each found fact holding the term gains its weight
            held = _slots(p)
            at = np.searchsorted(held, slots)
            at[at == len(held)] = 0
            scores[held[at] == slots] += _weight(p)
        alive = self._alive[slots]
        slots, scores = slots[alive], scores[alive] - self._norm[slots[alive]]
        if len(slots) > limit:  # the best and every tie of the last of them, then sorted
            best = scores >= -np.partition(-scores, limit - 1)[limit - 1]
            slots, scores = slots[best], scores[best]
        order = np.lexsort((-slots, -scores))[:limit]
        entries, size, shared_with = self._entries, len(words), words.intersection
        out: list[Candidate[Fact]] = []
        for slot in slots[order].tolist():
            entry = entries[slot]
            assert entry is not None  # a live slot
            fact, held_words = entry
            shared = len(shared_with(held_words))
            union = size + len(held_words) - shared
            # Candidate(fact, jaccard) without the named tuple's Python-level __new__
            out.append(_tuple(Candidate, (fact, shared / union if union else 1.0, None)))
        return out


def _slots(p: _Postings) -> npt.NDArray[np.int64]:
    """A word's postings as an array (a copy: the postings may grow while it is held)."""
    return np.frombuffer(p.slots, dtype=np.int64).copy()


def _weight(p: _Postings) -> float:
    return 1.0 / math.log(2.0 + p.live)


def _scores(rare: list[_Postings]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Every slot the postings hold (ascending) and the sum of the weights of those holding it."""
    if len(rare) == 1:
        slots = _slots(rare[0])
        return slots, np.full(len(slots), _weight(rare[0]))
    held = np.concatenate([np.frombuffer(p.slots, dtype=np.int64) for p in rare])
    weights = np.repeat([_weight(p) for p in rare], [len(p.slots) for p in rare])
    slots, inverse = np.unique(held, return_inverse=True)
    summed = np.bincount(inverse, weights=weights, minlength=len(slots))
    return slots, summed.astype(np.float64, copy=False)
