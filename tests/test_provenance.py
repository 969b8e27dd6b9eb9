"""The author and thread signals (retrieval/provenance.py): unit cases, then through search on
both stores, with the field stored and returned."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.retrieval.models import SearchMode
from engram.retrieval.provenance import Provenance, adjust, named_authors, thread_strength
from engram.retrieval.scoring import FactorWeights, LayerScoring, ScoringConfig

ONLY_RELEVANCE = LayerScoring(weights=FactorWeights(1.0, 0.0, 0.0, 0.0, 0.0))


def relevance_only(**kw: float) -> ScoringConfig:
    return ScoringConfig(
        fact=ONLY_RELEVANCE, episode=ONLY_RELEVANCE, procedure=ONLY_RELEVANCE, **kw
    )  # type: ignore[arg-type]


def test_named_authors_match_whole_words_in_any_case() -> None:
    authors = ["Tim", "John", "tom-bot", None, "a"]
    assert named_authors("What does tim like?", authors) == {"Tim"}
    assert named_authors("Did Timothy call?", authors) == frozenset()
    assert named_authors("ask TOM-BOT and John", authors) == {"tom-bot", "John"}
    # one-letter authors never match: too many false hits
    assert named_authors("a b c", authors) == frozenset()


def test_thread_strength_is_the_mean_of_the_best_three_scaled_to_the_strongest() -> None:
    relevance = {"a": 0.9, "b": 0.6, "c": 0.3, "d": 0.1, "e": 0.9, "x": 0.5}
    threads = {"a": "s1", "b": "s1", "c": "s1", "d": "s1", "e": "s2", "x": None}
    strength = thread_strength(relevance, threads, top=3)
    assert strength["s1"] == pytest.approx(1.0)  # (0.9 + 0.6 + 0.3) / 3 = 0.6
    assert strength["s2"] == pytest.approx(0.3 / 0.6)  # a lone hit counts its missing ones as 0
    assert None not in strength


def test_signals_are_neutral_when_they_say_nothing() -> None:
    relevance = {"a": 0.8, "b": 0.4}
    provenance = {"a": Provenance("Tim", None), "b": Provenance("John", None)}
    out = adjust(
        "what happened yesterday", relevance, provenance, author_weight=0.1, thread_weight=0.1
    )
    assert out["a"].relevance == pytest.approx(0.8) and out["a"].author_named is None
    assert out["b"].relevance == pytest.approx(0.4) and out["b"].thread_support is None


def test_adjusted_relevance_is_the_weighted_mix_and_stays_in_range() -> None:
    relevance = {"a": 0.5, "b": 1.0, "c": 0.0}
    provenance = {
        "a": Provenance("Tim", "s1"),
        "b": Provenance("John", "s2"),
        "c": Provenance("Tim", "s1"),
    }
    out = adjust("what does Tim read?", relevance, provenance, author_weight=0.2, thread_weight=0.3)
    # s1: (0.5 + 0 + 0) / 3, s2: 1 / 3 → s1 is half as strong as s2
    assert out["a"].thread_support == pytest.approx(0.5)
    assert out["a"].relevance == pytest.approx(0.5 * 0.5 + 0.2 * 1.0 + 0.3 * 0.5)
    assert out["b"].relevance == pytest.approx(0.5 * 1.0 + 0.2 * 0.0 + 0.3 * 1.0)
    assert out["c"].author_named is True and out["b"].author_named is False
    assert all(0.0 <= a.relevance <= 1.0 for a in out.values())


def test_weights_are_checked() -> None:
    with pytest.raises(ValueError, match="below 1"):
        ScoringConfig(author_weight=0.5, thread_weight=0.5)
    with pytest.raises(ValueError, match="negative"):
        ScoringConfig(author_weight=-0.1)


def test_thread_is_stored_and_returned(engram: Engram) -> None:
    memory = engram.memories.add(NewMemory(content="Booked the flights", thread="chat-42"), LOCAL)
    assert memory.thread == "chat-42"
    assert engram.memories.get(memory.id, LOCAL).thread == "chat-42"
    other = engram.memories.add(NewMemory(content="Paid the hotel", thread="chat-7"), LOCAL)
    engram.memories.add(NewMemory(content="No thread here"), LOCAL)
    listed = engram.memories.list_memories(LOCAL, MemoryFilter(threads=["chat-42"])).items
    assert [m.id for m in listed] == [memory.id]
    both = engram.memories.list_memories(LOCAL, MemoryFilter(threads=["chat-42", "chat-7"]))
    assert {m.id for m in both.items} == {memory.id, other.id} and both.total == 2
    with pytest.raises(ValueError, match="thread"):
        NewMemory(content="x", thread="")


def ids(engram: Engram, query: str) -> list[str]:
    result = engram.search.search(query, LOCAL, mode=SearchMode.KEYWORD, count_access=False)
    return [i.memory.id for i in result.items]


def test_a_query_naming_an_author_prefers_that_authors_memories(engram: Engram) -> None:
    def add(content: str, author: str) -> str:
        return engram.memories.add(NewMemory(content=content, author=author), LOCAL).id

    john = add("I like reading fantasy novels", "John")
    tim = add("I like fantasy novels", "Tim")
    query = "What does Tim like reading?"
    engram.search.scoring = relevance_only(author_weight=0.0, thread_weight=0.0)
    assert ids(engram, query)[0] == john  # more of the query's words
    engram.search.scoring = relevance_only(author_weight=0.4)
    assert ids(engram, query)[0] == tim
    result = engram.search.search(query, LOCAL, count_access=False)
    by_id = {i.memory.id: i.breakdown for i in result.items}
    assert by_id[tim].author_named is True and by_id[john].author_named is False
    assert by_id[tim].stream_relevance is not None
    assert by_id[tim].stream_relevance < by_id[john].stream_relevance  # type: ignore[operator]


def test_a_memory_in_a_strongly_matching_thread_is_lifted(engram: Engram) -> None:
    def add(content: str, thread: str) -> str:
        return engram.memories.add(NewMemory(content=content, thread=thread), LOCAL).id

    add("We planned the trip to Lisbon for May", "trip")
    add("The Lisbon hotel is near the river", "trip")
    booked = add("The flights are booked for Friday morning", "trip")
    other = add("Flights are expensive", "news")
    query = "Lisbon trip flights"
    # each flight memory shares one word of three: keep them above the floor to compare them
    engram.search.scoring = relevance_only(author_weight=0.0, thread_weight=0.0, min_relevance=0)
    alone = {i.memory.id: i.score for i in engram.search.search(query, LOCAL).items}
    assert alone[other] >= alone[booked]  # the words alone: at least as good (shorter)
    engram.search.scoring = relevance_only(thread_weight=0.3, min_relevance=0)
    order = ids(engram, query)
    assert order.index(booked) < order.index(other)
    result = engram.search.search(query, LOCAL, count_access=False)
    by_id = {i.memory.id: i.breakdown for i in result.items}
    assert by_id[booked].thread_support == pytest.approx(1.0)
    assert by_id[other].thread_support is not None and by_id[other].thread_support < 1.0
    b = by_id[booked]
    assert b.relevance.value == pytest.approx(0.7 * b.stream_relevance + 0.3 * 1.0)  # type: ignore[operator]


def test_the_breakdown_still_adds_up(engram: Engram) -> None:
    engram.search.scoring = replace(ScoringConfig(), thread_weight=0.2)
    for text, thread in (("Deploys go out on Tuesday", "s1"), ("Deploy freeze in August", "s2")):
        engram.memories.add(NewMemory(content=text, thread=thread), LOCAL)
    for item in engram.search.search("deploy", LOCAL, count_access=False).items:
        b = item.breakdown
        parts = (b.relevance, b.importance, b.confidence, b.recency, b.frequency)
        assert sum(f.contribution for f in parts) == pytest.approx(item.score)
