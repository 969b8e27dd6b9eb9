"""PostgreSQL search at a size where its shortcuts apply: keyword terms planned by frequency
(store/postgres/keywords.py) and the in-process copy of the vectors (store/postgres/vector_copy.py)
filtered in memory and re-scored exactly."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory
from engram.store.postgres import PostgresStore, keywords
from tests.conftest import FakeClock, embed_randomly


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()


def test_common_terms_are_dropped_when_a_rarer_one_is_left(
    pg_store: PostgresStore, executed: list[str]
) -> None:
    engram = Engram(pg_store, clock=FakeClock())
    engram.environments.create("big", LOCAL)
    n = keywords.MIN_ROWS_FOR_PRUNING + 100
    news = [NewMemory(content=f"the billing service number {i}") for i in range(n)]
    news += [NewMemory(content=f"the zanzibar service restarted, case {i}") for i in range(3)]
    for start in range(0, len(news), 1000):
        engram.memories.add_many(news[start : start + 1000], LOCAL, "big")
    frequencies = keywords.TermFrequencies()
    with pg_store.db.reader() as conn:
        both = keywords.plan(conn, ["service", "zanzibar"], frequencies)
        alone = keywords.plan(conn, ["service"], frequencies)
        none = keywords.plan(conn, ["the"], frequencies)
    assert both is not None and alone is not None
    assert both.tsquery == "('zanzibar')"  # 'service' is in every memory: it cannot rank
    assert both.bounded  # 3 matches: read through the GIN index
    assert alone.tsquery == "('servic')"  # the only term is kept, however common
    assert not alone.bounded  # thousands of matches: the planner chooses
    assert none is None  # a stopword leaves nothing to search for
    # words not seen before: their queries and document counts in one round trip
    fresh = keywords.TermFrequencies()
    with pg_store.db.reader() as conn:
        fresh.total(conn)  # counted once every few minutes
        executed.clear()
        again = keywords.plan(conn, ["service", "zanzibar", "restarted"], fresh)
    assert len(executed) == 1
    assert again is not None and again.tsquery == "('zanzibar') | ('restart')"
    hits = engram.search.search("zanzibar service", LOCAL, environment="big", limit=5)
    assert len(hits.items) == 3
    assert all("zanzibar" in h.memory.content for h in hits.items)


def test_vector_search_filters_in_the_copy_and_matches_exact(
    pg_store: PostgresStore,
) -> None:
    engram = Engram(pg_store, clock=FakeClock())
    mine = engram.environments.create("mine", LOCAL)
    engram.environments.create("other", LOCAL)
    rng = np.random.default_rng(5)

    def fill(env: str, count: int) -> tuple[list[str], np.ndarray]:
        added = engram.memories.add_many(
            [NewMemory(content=f"{env} memory {i}") for i in range(count)], LOCAL, env
        )
        ids = [m.id for m in added]
        return ids, embed_randomly(pg_store, "m16", ids, rng)

    ids, vecs = fill("mine", 400)
    fill("other", 400)
    for q in rng.standard_normal((5, 16)).astype(np.float32):
        q /= np.linalg.norm(q)
        hits = pg_store.vector_search(q, "m16", MemoryFilter(environment_ids=[mine.id]), limit=10)
        exact = np.argsort(-(vecs @ q))[:10]
        assert [h.memory_id for h in hits][:5] == [ids[i] for i in exact[:5]]
        assert len(hits) == 10 and {h.memory_id for h in hits} <= set(ids)
        assert np.allclose([h.score for h in hits[:5]], (vecs @ q)[exact[:5]], atol=1e-5)


def test_a_search_of_a_loaded_copy_is_two_statements_and_one_passing_none_is_one(
    pg_store: PostgresStore, executed: list[str]
) -> None:
    engram = Engram(pg_store, clock=FakeClock())
    few = engram.environments.create("few", LOCAL)
    added = engram.memories.add_many(
        [NewMemory(content=f"few memory {i}") for i in range(30)], LOCAL, "few"
    )
    vecs = embed_randomly(pg_store, "m16", [m.id for m in added], np.random.default_rng(8))
    q = vecs[0] + 0.5 * vecs[1]
    q /= np.linalg.norm(q)
    flt = MemoryFilter(environment_ids=[few.id])
    pg_store.vector_search(q, "m16", flt, limit=10)  # the first search loads the copy
    statements = executed
    statements.clear()
    hits = pg_store.vector_search(q, "m16", flt, limit=10)
    # what changed since the last read (nothing), then the float32 vectors of the rows kept
    assert len(statements) == 2
    exact = np.argsort(-(vecs @ q))[:10]
    assert [h.memory_id for h in hits] == [added[i].id for i in exact]
    assert np.allclose([h.score for h in hits], (vecs @ q)[exact], atol=1e-5)
    statements.clear()
    none = MemoryFilter(environment_ids=[few.id], layers=[Layer.EPISODE])
    assert pg_store.vector_search(q, "m16", none, limit=10) == []
    assert len(statements) == 1  # the refresh alone: the copy passes no row
