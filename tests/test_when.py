"""The time a query names (retrieval/when.py): what is read as a time, and how a memory
recorded then is preferred by search, on both stores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.retrieval.when import Named, matches, named_times
from tests.test_provenance import ids, relevance_only

NOW = datetime(2024, 1, 10, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("What setback did Melanie face in October 2023?", [Named(2023, 10)]),
        ("What did she show on October 13, 2023?", [Named(2023, 10, 13)]),
        ("notes from 13th of October 2023", [Named(2023, 10, 13)]),
        ("When did Melanie go camping in June?", [Named(None, 6)]),
        ("how often in 2023", [Named(2023)]),
        ("the 2023-10-13 standup", [Named(2023, 10, 13)]),
        ("what did we release on May 7th", [Named(None, 5, 7)]),
        ("what may happen next", []),  # the verb is not a month
        ("port 2023 of the server", []),  # a number is not a year without a preposition
        ("which package manager", []),
    ],
)
def test_times_a_query_names(query: str, named: list[Named]) -> None:
    assert named_times(query, NOW) == named


def test_relative_times_resolve_against_now() -> None:
    (yesterday,) = named_times("what did we decide yesterday?", NOW)
    assert matches([yesterday], datetime(2024, 1, 9, 23, 0, tzinfo=UTC))
    assert not matches([yesterday], datetime(2024, 1, 10, 9, 0, tzinfo=UTC))
    (week,) = named_times("the bug from last week", NOW)
    assert matches([week], datetime(2024, 1, 2, tzinfo=UTC))
    assert not matches([week], datetime(2023, 12, 1, tzinfo=UTC))
    (ago,) = named_times("what broke 3 days ago", NOW)
    assert matches([ago], datetime(2024, 1, 7, 12, tzinfo=UTC))
    assert not matches([ago], datetime(2024, 1, 1, tzinfo=UTC))


def test_a_month_without_a_year_matches_it_in_any_year() -> None:
    june = named_times("in June", NOW)
    assert matches(june, datetime(2021, 6, 30, tzinfo=UTC))
    assert not matches(june, datetime(2021, 7, 1, tzinfo=UTC))


def test_a_memory_recorded_in_the_named_time_is_preferred(engram: Engram) -> None:
    def add(content: str, at: datetime) -> str:
        return engram.memories.add(NewMemory(content=content, created_at=at), LOCAL).id

    july = add("Deploy freeze for the billing service", datetime(2023, 7, 14, tzinfo=UTC))
    march = add("Billing deploy freeze: the deploy freeze", datetime(2023, 3, 2, tzinfo=UTC))
    query = "deploy freeze billing in July 2023"
    engram.search.scoring = relevance_only(author_weight=0.0, thread_weight=0.0, time_weight=0.0)
    plain = ids(engram, query)
    assert plain[0] == march  # the words alone prefer March's memory
    engram.search.scoring = relevance_only(author_weight=0.0, thread_weight=0.0, time_weight=0.3)
    assert ids(engram, query)[0] == july
    by_id = {
        i.memory.id: i.breakdown
        for i in engram.search.search(query, LOCAL, count_access=False).items
    }
    assert by_id[july].time_matched is True and by_id[march].time_matched is False
    b = by_id[july]
    assert b.relevance.value == pytest.approx(0.7 * b.stream_relevance + 0.3)  # type: ignore[operator]
    # a query naming no time: the signal is neutral and the order is the streams' own
    assert ids(engram, "deploy freeze billing") == [i for i in plain if i in (july, march)]
    neutral = engram.search.search("deploy freeze billing", LOCAL, count_access=False).items
    assert all(i.breakdown.time_matched is None for i in neutral)
