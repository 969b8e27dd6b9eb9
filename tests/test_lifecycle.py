"""Dedup and contradiction on write, each rule on both sides of its threshold, and the undo of
each action. Real SQLite files; a deterministic embedder picks exact cosines."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryFilter, MemoryPatch, NewMemory, Status
from engram.errors import Conflict, InvalidInput
from engram.lifecycle import WriteAction
from engram.lifecycle.dedup import jaccard, word_set
from engram.lifecycle.reviews import ReviewStatus
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


class ChosenEmbedder:
    """Texts registered with a cosine to an anchor get exactly that cosine with it (and the
    product of their cosines with each other); every other text gets its own axis."""

    model_id = "test-chosen-v1"
    dimensions = 64

    def __init__(self) -> None:
        self._vectors: dict[str, np.ndarray] = {}
        self._next_axis = 1

    def _axis(self) -> int:
        axis = self._next_axis
        self._next_axis += 1
        return axis

    def anchor(self, text: str) -> None:
        v = np.zeros(self.dimensions, dtype=np.float32)
        v[0] = 1.0
        self._vectors[text] = v

    def near(self, text: str, cosine: float) -> None:
        v = np.zeros(self.dimensions, dtype=np.float32)
        v[0] = cosine
        v[self._axis()] = math.sqrt(1.0 - cosine * cosine)
        self._vectors[text] = v

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            if text not in self._vectors:
                v = np.zeros(self.dimensions, dtype=np.float32)
                v[self._axis()] = 1.0
                self._vectors[text] = v
            rows.append(self._vectors[text])
        return np.stack(rows).astype(np.float32)


@pytest.fixture
def chosen() -> ChosenEmbedder:
    return ChosenEmbedder()


@pytest.fixture
def semantic(store: SQLiteStore, clock: FakeClock, chosen: ChosenEmbedder) -> Engram:
    return Engram(store, clock=clock, embedder=chosen)


def fact(text: str, **kw: object) -> NewMemory:
    return NewMemory(content=text, **kw)  # type: ignore[arg-type]


def active(engram: Engram) -> list[str]:
    return [m.content for m in engram.memories.list_memories(LOCAL, limit=100).items]


# -- dedup by words ------------------------------------------------------------------------
def test_jaccard_060_merges_and_059_does_not(engram: Engram) -> None:
    base = " ".join(WORDS[:12])
    at_060 = base + " " + " ".join(WORDS[12:20])  # 12 shared of 20
    assert jaccard(word_set(base), word_set(at_060)) == pytest.approx(0.60)
    base13 = " ".join(WORDS[:13])
    at_059 = base13 + " " + " ".join(WORDS[13:22])  # 13 shared of 22 = 0.5909
    assert jaccard(word_set(base13), word_set(at_059)) == pytest.approx(13 / 22)

    first = engram.lifecycle.remember(fact(base), LOCAL)
    out = engram.lifecycle.remember(fact(at_060, confidence=0.6), LOCAL)
    assert out.action is WriteAction.MERGED
    assert out.absorbed_into == first.memory.id
    assert out.memory.reinforcement_count == 1
    assert out.memory.confidence > first.memory.confidence
    record = engram.memories.get(out.merged_record or "", LOCAL)
    assert record.status is Status.MERGED and record.merged_into == first.memory.id
    assert record.content == at_060  # the new wording is kept
    reasons = [v.reason for v in engram.memories.history(first.memory.id, LOCAL)]
    assert any(out.merged_record in r for r in reasons)

    other = engram.environments.create("other", LOCAL)
    engram.lifecycle.remember(fact(base13), LOCAL, other.id)
    out = engram.lifecycle.remember(fact(at_059), LOCAL, other.id)
    assert out.action is WriteAction.CREATED
    assert engram.memories.list_memories(LOCAL, environment=other.id).total == 2


def test_dedup_stays_inside_the_environment(engram: Engram) -> None:
    engram.lifecycle.remember(fact("Deploys go through staging first"), LOCAL)
    engram.environments.create("webapp", LOCAL)
    out = engram.lifecycle.remember(fact("Deploys go through staging first"), LOCAL, "webapp")
    assert out.action is WriteAction.CREATED


def test_episodes_and_procedures_are_stored_as_given(engram: Engram) -> None:
    a = engram.lifecycle.remember(NewMemory(layer="episode", content="Fixed the login bug"), LOCAL)
    b = engram.lifecycle.remember(NewMemory(layer="episode", content="Fixed the login bug"), LOCAL)
    assert a.action is b.action is WriteAction.CREATED


# -- similarity band with embeddings --------------------------------------------------------
OLD = "I live in Paris"
MOVED = "I moved to Berlin"  # no shared content word: only the cosine sees them as close


@pytest.mark.parametrize(
    ("cosine", "expected"),
    [(0.74, WriteAction.CREATED), (0.75, WriteAction.SUPERSEDED), (0.91, WriteAction.SUPERSEDED)],
)
def test_contradiction_band_edges(
    semantic: Engram, chosen: ChosenEmbedder, cosine: float, expected: WriteAction
) -> None:
    chosen.anchor(OLD)
    chosen.near(MOVED, cosine)
    old = semantic.lifecycle.remember(fact(OLD), LOCAL).memory
    out = semantic.lifecycle.remember(fact(MOVED), LOCAL)
    assert out.action is expected
    assert semantic.lifecycle.reviews(LOCAL) == []
    now_old = semantic.memories.get(old.id, LOCAL)
    if expected is WriteAction.SUPERSEDED:
        assert out.superseded == old.id
        assert now_old.status is Status.SUPERSEDED and now_old.superseded_by == out.memory.id
        assert out.memory.supersedes == old.id
        assert active(semantic) == [MOVED]
    else:
        assert now_old.status is Status.ACTIVE
        assert sorted(active(semantic)) == sorted([OLD, MOVED])


@pytest.mark.parametrize(
    ("cosine", "expected"),
    [
        (0.74, WriteAction.CREATED),
        (0.75, WriteAction.QUEUED),
        (0.91, WriteAction.QUEUED),
        (0.92, WriteAction.MERGED),
    ],
)
def test_unclear_pairs_go_to_review_and_092_merges(
    semantic: Engram, chosen: ChosenEmbedder, cosine: float, expected: WriteAction
) -> None:
    # the same slot (a preference), the same value, different details on both sides
    a, b = "Prefers green tea every morning", "Prefers green tea at breakfast"
    chosen.anchor(a)
    chosen.near(b, cosine)
    first = semantic.lifecycle.remember(fact(a), LOCAL).memory
    out = semantic.lifecycle.remember(fact(b), LOCAL)
    assert out.action is expected
    queue = semantic.lifecycle.reviews(LOCAL)
    if expected is WriteAction.QUEUED:
        assert [(r.memory_id, r.other_id) for r in queue] == [(out.memory.id, first.id)]
        assert out.review_id == queue[0].id
    else:
        assert queue == []
    if expected is WriteAction.MERGED:
        assert out.absorbed_into == first.id
        assert active(semantic) == [a]


def test_change_of_mind_supersedes_old_fact_and_keeps_unrelated_one(engram: Engram) -> None:
    old = engram.lifecycle.remember(fact("Alice uses vim for editing code"), LOCAL).memory
    bob = engram.lifecycle.remember(fact("Bob uses vim for editing code"), LOCAL)
    assert bob.action is WriteAction.CREATED  # same words, different subject: another fact
    out = engram.lifecycle.remember(fact("Alice switched to emacs for editing code"), LOCAL)
    assert out.action is WriteAction.SUPERSEDED and out.superseded == old.id
    assert "switched to" in out.reason
    assert sorted(active(engram)) == sorted(
        ["Bob uses vim for editing code", "Alice switched to emacs for editing code"]
    )
    # still searchable with the superseded status, and the history says why
    flt = MemoryFilter(statuses=[Status.SUPERSEDED])
    assert [m.id for m in engram.memories.list_memories(LOCAL, flt).items] == [old.id]
    last = engram.memories.history(old.id, LOCAL)[-1]
    assert last.action.value == "supersede" and out.memory.id in last.reason


def test_change_of_mind_with_embeddings_picks_the_closest(
    semantic: Engram, chosen: ChosenEmbedder
) -> None:
    chosen.anchor("Moved to Lisbon last spring")
    chosen.near("Lives in Madrid", 0.85)
    chosen.near("My sister rents a flat near Madrid", 0.80)
    semantic.lifecycle.remember(fact("My sister rents a flat near Madrid"), LOCAL)
    old = semantic.lifecycle.remember(fact("Lives in Madrid"), LOCAL).memory
    out = semantic.lifecycle.remember(fact("Moved to Lisbon last spring"), LOCAL)
    assert out.superseded == old.id
    assert "My sister rents a flat near Madrid" in active(semantic)


def test_clear_value_change_is_never_merged(engram: Engram) -> None:
    old = engram.lifecycle.remember(fact("Project atlas deploy target is staging"), LOCAL).memory
    out = engram.lifecycle.remember(fact("Project atlas deploy target is production"), LOCAL)
    assert out.action is WriteAction.SUPERSEDED and out.superseded == old.id
    out = engram.lifecycle.remember(fact("The standup starts at 9:30 every Monday"), LOCAL)
    out2 = engram.lifecycle.remember(fact("The standup starts at 10:00 every Monday"), LOCAL)
    assert out2.superseded == out.memory.id
    neg = engram.lifecycle.remember(fact("The standup does not start every Monday"), LOCAL)
    assert neg.action is WriteAction.SUPERSEDED


# -- undo ----------------------------------------------------------------------------------
def test_undo_merge_with_restore_and_with_lifecycle_undo(engram: Engram) -> None:
    first = engram.lifecycle.remember(fact("Prefers pnpm over npm for installs"), LOCAL).memory
    out = engram.lifecycle.remember(fact("Prefers pnpm over npm for installs, always"), LOCAL)
    record = out.merged_record or ""
    # plain restore: the wording comes back as its own active fact
    back = engram.memories.restore(record, LOCAL)
    assert back.status is Status.ACTIVE and back.merged_into is None
    assert engram.memories.get(first.id, LOCAL).reinforcement_count == 1
    # merge again, then undo both sides
    engram.lifecycle.maintain(LOCAL)
    assert engram.memories.get(record, LOCAL).status is Status.MERGED
    assert engram.memories.get(first.id, LOCAL).reinforcement_count == 2
    changed = engram.lifecycle.undo(record, LOCAL)
    assert [m.id for m in changed] == [record, first.id]
    assert engram.memories.get(record, LOCAL).status is Status.ACTIVE
    assert engram.memories.get(first.id, LOCAL).reinforcement_count == 1


def test_undo_of_a_merge_from_the_absorbing_side_takes_back_all_it_added(engram: Engram) -> None:
    first = engram.lifecycle.remember(fact("Prefers pnpm over npm for installs"), LOCAL).memory
    again = fact("Prefers pnpm over npm for installs, always", importance=0.9, tags=["js"])
    out = engram.lifecycle.remember(again, LOCAL)
    assert out.action is WriteAction.MERGED and out.absorbed_into == first.id
    merged = engram.memories.get(first.id, LOCAL)
    assert merged.confidence > first.confidence and merged.importance == 0.9
    assert merged.tags == ["js"] and merged.reinforcement_count == 1
    # given the fact that absorbed it, undo finds the merge (it was "no lifecycle action")
    changed = engram.lifecycle.undo(first.id, LOCAL)
    record = out.merged_record or ""
    assert [m.id for m in changed] == [record, first.id]
    assert engram.memories.get(record, LOCAL).status is Status.ACTIVE
    back = engram.memories.get(first.id, LOCAL)
    assert back.status is Status.ACTIVE and back.reinforcement_count == 0
    assert back.confidence == first.confidence  # the merge's step, taken back
    assert back.importance == first.importance and back.tags == []
    with pytest.raises(InvalidInput, match="no lifecycle action"):
        engram.lifecycle.undo(first.id, LOCAL)  # nothing absorbed is still merged into it


def test_undoing_a_merge_keeps_what_changed_on_the_target_since(engram: Engram) -> None:
    first = engram.lifecycle.remember(fact("Prefers pnpm over npm", tags=["tools"]), LOCAL).memory
    out = engram.lifecycle.remember(fact("Prefers pnpm over npm", importance=0.7), LOCAL)
    assert out.absorbed_into == first.id
    engram.memories.update(first.id, MemoryPatch(importance=0.95), LOCAL)
    engram.lifecycle.undo(out.merged_record or "", LOCAL)
    back = engram.memories.get(first.id, LOCAL)
    assert back.importance == 0.95 and back.tags == ["tools"]  # the user's own edit stays
    assert back.confidence == first.confidence


def test_undo_supersede_from_either_side(engram: Engram) -> None:
    old = engram.lifecycle.remember(fact("Alice uses vim for editing code"), LOCAL).memory
    new = engram.lifecycle.remember(fact("Alice switched to emacs for editing code"), LOCAL)
    restored = engram.memories.restore(old.id, LOCAL)  # the documented one-sided undo
    assert restored.status is Status.ACTIVE and restored.superseded_by is None
    assert engram.memories.get(new.memory.id, LOCAL).supersedes == old.id  # history link kept

    engram.memories.delete(restored.id, LOCAL)
    old2 = engram.lifecycle.remember(fact("Carol uses nano for editing code"), LOCAL).memory
    new2 = engram.lifecycle.remember(fact("Carol switched to helix for editing code"), LOCAL)
    assert new2.superseded == old2.id
    changed = engram.lifecycle.undo(new2.memory.id, LOCAL)  # from the newer side
    assert {m.id for m in changed} == {old2.id, new2.memory.id}
    assert engram.memories.get(old2.id, LOCAL).status is Status.ACTIVE
    assert engram.memories.get(new2.memory.id, LOCAL).supersedes is None
    with pytest.raises(InvalidInput, match="no lifecycle action"):
        engram.lifecycle.undo(new2.memory.id, LOCAL)


# -- review queue ----------------------------------------------------------------------------
def test_review_accept_supersedes_and_dismiss_keeps_both(engram: Engram) -> None:
    # a conflict on one slot, not strong enough for an important memory: queued
    bob = engram.lifecycle.remember(fact("User prefers tea in the morning", importance=0.9), LOCAL)
    q = engram.lifecycle.remember(fact("User prefers coffee in the morning"), LOCAL)
    assert q.action is WriteAction.QUEUED
    item = engram.lifecycle.resolve_review(q.review_id or "", LOCAL, accept=True, note="he told me")
    assert item.status is ReviewStatus.ACCEPTED and item.resolved_by == LOCAL.label
    assert engram.memories.get(bob.memory.id, LOCAL).status is Status.SUPERSEDED
    with pytest.raises(Conflict):
        engram.lifecycle.resolve_review(item.id, LOCAL, accept=False)

    dan = engram.lifecycle.remember(fact("Dan prefers light themes", importance=0.9), LOCAL).memory
    q2 = engram.lifecycle.remember(fact("Dan prefers dark themes"), LOCAL)
    item2 = engram.lifecycle.resolve_review(q2.review_id or "", LOCAL, accept=False)
    assert item2.status is ReviewStatus.DISMISSED
    assert engram.memories.get(dan.id, LOCAL).status is Status.ACTIVE
    assert engram.lifecycle.reviews(LOCAL) == []
    assert len(engram.lifecycle.reviews(LOCAL, status=None)) == 2
    # a dismissed pair is not queued again by maintenance
    assert engram.lifecycle.maintain(LOCAL).queued == []


def test_many_valued_attributes_accumulate_instead_of_superseding() -> None:
    from engram.lifecycle.contradiction import Verdict, check

    hobbies = ["climbing", "chess", "sailing", "pottery"]
    for old, new in itertools.pairwise(hobbies):
        found = check(
            f"The user really loves {old} on weekends", f"The user really loves {new} on weekends"
        )
        assert found.verdict is Verdict.DISTINCT, (old, new, found)
    # a single-valued attribute still changes, and a change marker still takes a value back
    assert check("Alice lives in Berlin", "Alice lives in Lisbon").verdict is Verdict.CLEAR
    assert check("Bob uses vim", "Bob switched to emacs").verdict is Verdict.CLEAR


def test_two_facts_that_each_held_a_secret_are_not_alike_for_it(tmp_path: Path) -> None:
    """Walkthrough 35b: 'the wifi password is …' merged into 'My password is …' (Jaccard
    0.67 on the words of the two identical secret markers), so the wifi fact no longer came
    up on its own. A marker is not a word two facts share."""
    from engram.lifecycle.dedup import fact_words

    mine, wifi = "My password is hunter2xyz", "The wifi password is Wifi9pass"
    with Engram(SQLiteStore(tmp_path / "e.db")) as engram:
        first = engram.lifecycle.remember(NewMemory(content=mine), LOCAL)
        second = engram.lifecycle.remember(NewMemory(content=wifi), LOCAL)
        assert "[REDACTED:" in first.memory.content
        assert (first.action.value, second.action.value) == ("created", "created")
        assert word_set(second.memory.content) == {"wifi", "password"}
        assert fact_words(second.memory.content) == {"wifi", "password"}
