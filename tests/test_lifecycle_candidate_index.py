"""The lifecycle's candidate index (``engram.lifecycle.index``) against a plain reference:
after random puts, re-puts and removes, every lookup returns the facts a dictionary-and-set
scoring of the documented rule returns, in the same order, with the same Jaccard indexes."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

from engram.lifecycle.dedup import Fact, word_set
from engram.lifecycle.index import COMMON, NORM, CandidateIndex
from engram.models import Layer, Memory, Status
from engram.store import MemoryText

WORDS = [f"w{i}" for i in range(40)]
NOW = datetime(2026, 12, 1, tzinfo=UTC)


class _Reference:
    """The rule written out plainly: a fact scores the weight 1/ln(2 + n) of each lookup term
    it holds (n: active facts holding the term), terms held by more than COMMON facts count
    only for facts a rarer term found (the rarest term seeds when all are common); less
    NORM per word; best first, of equal scores the fact entered last first."""

    def __init__(self) -> None:
        self.facts: dict[str, tuple[Fact, frozenset[str], int]] = {}
        self.entered = 0

    def put(self, fact: Fact) -> None:
        old = self.facts.get(fact.id)
        if old is not None and old[0].content == fact.content:
            self.facts[fact.id] = (fact, old[1], old[2])
            return
        self.entered += 1
        self.facts[fact.id] = (fact, word_set(fact.content), self.entered)

    def remove(self, fact_id: str) -> None:
        self.facts.pop(fact_id, None)

    def lookup(self, terms: frozenset[str], words: frozenset[str], limit: int) -> list[object]:
        held = {t: [i for i, f in self.facts.items() if t in f[1]] for t in terms}
        postings = sorted((ids for ids in held.values() if ids), key=len)
        if not postings:
            return []
        rare = [p for p in postings if len(p) <= COMMON] or postings[:1]
        scores: dict[str, float] = {}
        for ids in rare:
            for i in ids:
                scores[i] = scores.get(i, 0.0) + 1.0 / math.log(2.0 + len(ids))
        for ids in postings[len(rare) :]:
            for i in ids:
                if i in scores:
                    scores[i] += 1.0 / math.log(2.0 + len(ids))
        ranked = sorted(
            scores,
            key=lambda i: (
                -(scores[i] - NORM * len(self.facts[i][1])),
                -self.facts[i][2],
            ),
        )
        out = []
        for i in ranked[:limit]:
            fact, fw, _ = self.facts[i]
            out.append((fact, len(words & fw) / len(words | fw)))
        return out


def _text(rng: random.Random) -> str:
    # a few words hold most facts, so postings cross COMMON both ways as facts come and go
    common = rng.sample(WORDS[:3], rng.randint(0, 2))
    return " ".join(common + rng.sample(WORDS[3:], rng.randint(1, 5)))


def _memory(fact_id: str, text: str, status: Status = Status.ACTIVE) -> Memory:
    return Memory(
        id=fact_id,
        environment_id="env_1",
        layer=Layer.FACT,
        content=text,
        status=status,
        created_at=NOW,
        updated_at=NOW,
        author="u",
        version=1,
    )


def test_lookups_match_the_plain_rule_through_puts_and_removes() -> None:
    rng = random.Random(16)
    start = [MemoryText(f"m{i}", _text(rng), 0.5, False) for i in range(600)]
    index, reference = CandidateIndex(start), _Reference()
    for f in start:
        reference.put(f)
    ids = [f.id for f in start]
    for step in range(1500):
        # the second half only retires facts: postings fall below half live and are compacted
        roll = rng.random() if step < 750 else 0.6 + 0.4 * rng.random()
        if roll < 0.3:  # a new fact
            m = _memory(f"n{step}", _text(rng))
            ids.append(m.id)
            index.put(m), reference.put(m)
        elif roll < 0.5:  # a stored fact again (a merge target): same text, same slot
            fact_id = rng.choice(ids)
            entry = index.get(fact_id)
            if entry is not None:
                m = _memory(fact_id, entry[0].content)
                index.put(m), reference.put(m)
        elif roll < 0.6:  # an edited text
            m = _memory(rng.choice(ids), _text(rng))
            index.put(m), reference.put(m)
        elif roll < 0.85 or step >= 750:  # retired: superseded, merged or removed
            fact_id = rng.choice(ids)
            if rng.random() < 0.5:
                index.put(_memory(fact_id, "gone", Status.SUPERSEDED))
            else:
                index.remove(fact_id)
            reference.remove(fact_id)
        query = _text(rng)
        terms, words = word_set(query), word_set(query + " " + rng.choice(WORDS))
        got = [(c.memory, c.jaccard) for c in index.lookup(terms, words, 40)]
        assert got == reference.lookup(terms, words, 40), f"step {step}: {query!r}"
    assert len(index) == len(reference.facts)
    for fact_id in ids:
        entry = index.get(fact_id)
        expected = reference.facts.get(fact_id)
        assert (entry is None) == (expected is None)
        if entry is not None and expected is not None:
            assert entry == (expected[0], expected[1])


def test_a_word_whose_facts_are_all_gone_finds_nothing() -> None:
    index = CandidateIndex([MemoryText("a", "zebra stripes", 0.5, False)])
    index.remove("a")
    assert index.lookup(frozenset({"zebra"}), frozenset({"zebra"}), 40) == []
    assert len(index) == 0 and index.get("a") is None
