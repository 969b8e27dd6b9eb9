"""SQLite keyword search ranks in the index first and checks the filter on the best matches
only: the same hits as filtering every match, also when the best matches fail the filter."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory, Status
from engram.store.sqlite import SQLiteStore, fts, keyword
from engram.store.sqlite.rows import where


def _store(tmp_path: Path) -> tuple[SQLiteStore, Engram, str]:
    store = SQLiteStore(tmp_path / "k.db")
    e = Engram(store)
    env = e.environments.ensure_default(LOCAL).id
    return store, e, env


def test_best_matches_failing_the_filter_still_give_the_limit(tmp_path: Path) -> None:
    store, e, env = _store(tmp_path)
    # the strongest matches (the word three times) are all unimportant: a filter on importance
    # rejects every one the index ranks first
    strong = [NewMemory(content="kiwi kiwi kiwi grows", importance=0.1) for _ in range(60)]
    weak = [
        NewMemory(content=f"a kiwi among many other words number {i}", importance=0.9)
        for i in range(15)
    ]
    e.memories.add_many(strong + weak, LOCAL)
    flt = MemoryFilter(environment_ids=[env], min_importance=0.5)
    hits = store.keyword_search("kiwi", flt, limit=10)
    assert len(hits) == 10
    got = {m.id: m for m in store.get([h.memory_id for h in hits])}
    assert all(m.importance == 0.9 for m in got.values())
    # unfiltered, the strong ones come first
    top = store.keyword_search("kiwi", MemoryFilter(environment_ids=[env]), limit=10)
    assert {m.importance for m in store.get([h.memory_id for h in top])} == {0.1}
    store.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_hits_as_filtering_every_match(tmp_path: Path, seed: int) -> None:
    store, e, env = _store(tmp_path)
    rng = random.Random(seed)
    words = ["kiwi", "plum", "fig", "pear", "lime", "date"]
    items = [
        NewMemory(
            content=" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) + f" n{i}",
            importance=round(rng.random(), 2),
            layer=rng.choice([Layer.FACT, Layer.EPISODE]),
        )
        for i in range(400)
    ]
    added = e.memories.add_many(items, LOCAL)
    for m in rng.sample(added, 120):
        e.memories.delete(m.id, LOCAL)
    conn = store.db.reader()
    for _ in range(12):
        flt = MemoryFilter(
            environment_ids=[env],
            statuses=rng.choice([[], [Status.ACTIVE]]),
            layers=rng.choice([[], [Layer.FACT], [Layer.EPISODE]]),
            min_importance=rng.choice([None, 0.3, 0.8, 0.97]),
        )
        query = " ".join(rng.sample(words, 2))
        limit = rng.choice([1, 5, 20, 60])
        hits = store.keyword_search(query, flt, limit=limit)
        _, match = fts.plan(conn, query, flt, store._term_counts)
        cond, params = where(flt)
        every = keyword._filtered_inside(conn, match, cond, params, limit)
        # equal scores may be ordered either way: compare the scores, and the ids above ties
        assert [round(h.score, 9) for h in hits] == [round(float(r[1]), 9) for r in every]
        last = round(hits[-1].score, 9) if hits else None
        assert {h.memory_id for h in hits if round(h.score, 9) != last} == {
            r[0] for r in every if round(float(r[1]), 9) != last
        }
    store.close()
