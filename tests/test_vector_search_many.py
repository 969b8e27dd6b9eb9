"""Store.vector_search_many on both backends: each query answered exactly as vector_search and
then vector_scores of its other ids would answer it, whichever branch answers it (a large
filter, a small one, a filter passing nothing, a filter checked in SQL, widened); on PostgreSQL
one refresh of the copy for all of them."""

from __future__ import annotations

import numpy as np

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory
from engram.store import Store
from engram.store.protocol import KeywordQuery, VectorAnswer, VectorQuery
from tests.conftest import FakeClock, embed_randomly

MODEL = "m16"


def _fill(store: Store, engram: Engram, env: str, news: list[NewMemory], seed: int) -> list[str]:
    ids = [m.id for m in engram.memories.add_many(news, LOCAL, env)]
    embed_randomly(store, MODEL, ids, np.random.default_rng(seed))
    return ids


def _one_by_one(store: Store, q: np.ndarray, queries: list[VectorQuery]) -> list[VectorAnswer]:
    out = []
    for vq in queries:
        hits = store.vector_search(q, MODEL, vq.flt, limit=vq.limit)
        missing = [i for i in vq.also if i not in {h.memory_id for h in hits}]
        out.append(VectorAnswer(hits, store.vector_scores(q, MODEL, missing) if missing else {}))
    return out


def test_each_query_is_answered_as_alone(store: Store, executed: list[str]) -> None:
    engram = Engram(store, clock=FakeClock())
    big = engram.environments.create("big", LOCAL)
    small = engram.environments.create("small", LOCAL)
    rare = [NewMemory(content=f"rare note {i}", category="rare") for i in range(130)]
    big_ids = _fill(
        store, engram, "big", [NewMemory(content=f"big note {i}") for i in range(300)] + rare, 1
    )
    smalls = [NewMemory(content=f"small {i}") for i in range(30)]
    small_ids = _fill(store, engram, "small", smalls, 2)
    unembedded = engram.memories.add(NewMemory(content="no vector yet"), LOCAL, "small").id
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.standard_normal(16).astype(np.float32)
        q /= np.linalg.norm(q)
        asked = [big_ids[5], big_ids[250], small_ids[3], unembedded, "mem_unknown"]
        queries = [
            # 304 pass, some of ``asked`` among the hits
            VectorQuery(MemoryFilter(environment_ids=[big.id]), 10, asked),
            # 31 pass
            VectorQuery(MemoryFilter(environment_ids=[small.id]), 10, asked),
            # none pass
            VectorQuery(MemoryFilter(environment_ids=[big.id], layers=[Layer.EPISODE]), 10),
            # 130 pass, a category checked in SQL on the candidates, widened until 60 pass
            VectorQuery(MemoryFilter(environment_ids=[big.id], categories=["rare"]), 60),
            # a larger limit
            VectorQuery(MemoryFilter(environment_ids=[big.id]), 80, asked[:2]),
        ]
        expected = _one_by_one(store, q, queries)
        assert expected[0].hits and expected[2].hits == [] and len(expected[3].hits) == 60
        assert unembedded not in expected[0].scores and "mem_unknown" not in expected[1].scores
        executed.clear()
        got = store.vector_search_many(q, MODEL, queries)
        assert got == expected
        if store.__class__.__name__ == "PostgresStore":
            # the copy's refresh, the exact cosines of every plain search's rows, and for the
            # rare category an exact statement and its SQL check per widening
            assert sum("pg_current_snapshot" in s for s in executed) == 1
            assert len(executed) in (4, 6)
    assert store.vector_search_many(q, MODEL, []) == []


def test_both_streams_are_answered_as_one_by_one(store: Store) -> None:
    engram = Engram(store, clock=FakeClock())
    env = engram.environments.create("both", LOCAL)
    words = ["billing", "deploy", "lisbon", "rollback"]
    news = [NewMemory(content=f"note {i} about {words[i % 4]} and more") for i in range(200)]
    _fill(store, engram, "both", news, 4)
    engram.memories.add(NewMemory(content="billing without a vector"), LOCAL, "both")
    flt = MemoryFilter(environment_ids=[env.id])
    rng = np.random.default_rng(6)
    for text in ("billing rollback", "lisbon", "nothing matches zzz"):
        q = rng.standard_normal(16).astype(np.float32)
        q /= np.linalg.norm(q)
        queries = [
            VectorQuery(flt, 10),
            VectorQuery(MemoryFilter(environment_ids=[env.id], layers=[Layer.EPISODE]), 10),
        ]
        got = store.search_streams(KeywordQuery(text, flt, 60), q, MODEL, queries)
        assert got.keyword == store.keyword_search(text, flt, limit=60)
        assert got.nearest == [store.vector_search(q, MODEL, vq.flt, limit=10) for vq in queries]
        # the episodes' list is empty, so it lacks every keyword hit: each one's similarity
        # (those with a vector)
        expected = store.vector_scores(q, MODEL, [h.memory_id for h in got.keyword])
        assert len(expected) == len(got.keyword) - ("billing" in text)
        assert {i: got.similarity[i] for i in expected} == expected
        assert set(got.similarity) <= set(expected)
    assert got.keyword == [] and got.similarity == {}
