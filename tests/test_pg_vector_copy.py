"""The in-process copy of PostgreSQL's vectors kept current across processes
(store/postgres/vector_copy.py): two stores over one database stand for two server processes,
each with its own copy."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory, Status
from engram.store.postgres import PostgresStore, vector_copy
from engram.store.postgres import vectors as pgv
from engram.store.protocol import EmbeddingUpdate
from tests.conftest import FakeClock, embed_randomly

ANY_STATUS = MemoryFilter(statuses=list(Status))


Two = tuple[PostgresStore, PostgresStore, Engram]


@pytest.fixture
def two(pg_url: str) -> Iterator[Two]:
    """Two stores over one database, and an Engram writing through the first."""
    a, b = PostgresStore(pg_url), PostgresStore(pg_url)
    yield a, b, Engram(a, clock=FakeClock())
    a.close()
    b.close()


def _add(engram: Engram, store: PostgresStore, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    added = engram.memories.add_many(
        [NewMemory(content=f"memory {seed} {i}") for i in range(n)], LOCAL
    )
    ids = [m.id for m in added]
    return ids, embed_randomly(store, "m16", ids, np.random.default_rng(seed))


def _top(store: PostgresStore, q: np.ndarray, flt: MemoryFilter = ANY_STATUS) -> list[str]:
    return [h.memory_id for h in store.vector_search(q, "m16", flt, limit=5)]


def test_a_vector_written_by_one_process_is_found_by_the_others_next_search(two: Two) -> None:
    a, b, engram = two
    ids, vecs = _add(engram, a, 50, 1)
    assert _top(b, vecs[3])[0] == ids[3]  # b loads its copy
    more, more_vecs = _add(engram, a, 5, 2)
    assert _top(b, more_vecs[2])[0] == more[2]
    assert b._copy.rows_read == 55  # the second read took only the new rows
    # a re-embedded memory: b scores its new vector
    fresh = np.roll(vecs[7], 3)
    a.put_embeddings("m16", [_update(a, ids[7], fresh)])
    assert _top(b, fresh)[0] == ids[7]


def _update(store: PostgresStore, memory_id: str, vector: np.ndarray) -> EmbeddingUpdate:
    with store.db.reader() as conn:
        row = conn.execute(
            "SELECT content_hash FROM memories WHERE id = %s", (memory_id,)
        ).fetchone()
    assert row is not None
    return EmbeddingUpdate(memory_id, row[0], vector.astype(np.float32))


def test_a_purge_and_a_status_change_in_one_process_reach_the_others_copy(two: Two) -> None:
    a, b, engram = two
    ids, vecs = _add(engram, a, 40, 3)
    active = MemoryFilter()
    assert _top(b, vecs[5], active)[0] == ids[5]
    engram.memories.purge([ids[5]], LOCAL)
    assert ids[5] not in _top(b, vecs[5], ANY_STATUS)
    engram.memories.delete(ids[6], LOCAL)  # soft: its status changes, its vector stays
    assert ids[6] not in _top(b, vecs[6], active)
    assert _top(b, vecs[6], MemoryFilter(statuses=[Status.DELETED])) == [ids[6]]
    assert _top(b, vecs[7], MemoryFilter(layers=[Layer.EPISODE])) == []


def test_a_slow_transaction_committing_after_a_later_one_is_not_missed(
    two: Two, pg_url: str
) -> None:
    a, b, engram = two
    ids, vecs = _add(engram, a, 30, 4)
    slow_id, fast_id = (
        m.id
        for m in engram.memories.add_many(
            [NewMemory(content="slow one"), NewMemory(content="fast one")], LOCAL
        )
    )
    assert _top(b, vecs[0])[0] == ids[0]
    rng = np.random.default_rng(9)
    slow_vec, fast_vec = (v / np.linalg.norm(v) for v in rng.standard_normal((2, 16)))
    with psycopg.connect(pg_url) as slow:
        # the slow transaction writes first (its transaction id is the lower one) ...
        slow.execute(
            "INSERT INTO memory_vectors (memory_id, model_id, environment_id, content_hash, "
            "dim, embedding) SELECT id, 'm16', environment_id, content_hash, 16, %s::vector "
            "FROM memories WHERE id = %s",
            ("[" + ",".join(map(str, slow_vec.tolist())) + "]", slow_id),
        )
        # ... a later one commits, and b reads it while the slow one is still open
        a.put_embeddings("m16", [_update(a, fast_id, fast_vec)])
        assert _top(b, fast_vec)[0] == fast_id
        assert slow_id not in _top(b, slow_vec)
        slow.commit()
    assert _top(b, slow_vec)[0] == slow_id
    assert _top(b, fast_vec)[0] == fast_id


def test_a_memory_changed_after_the_refresh_is_not_returned_against_the_filter(two: Two) -> None:
    """The exact stage checks the filter on the rows it reads: a memory deleted between the
    copy's refresh and that statement (here: the search reuses a refresh from before the
    change) is not returned to a search for active memories."""
    a, _, engram = two
    ids, vecs = _add(engram, a, 20, 5)
    active = MemoryFilter()
    asks = [vector_copy.Ask(5, active.environment_ids, active.layers, active.statuses)]
    with a.db.reader() as conn:
        first = a._copy.search(conn, "m16", vecs[4], asks).hits[0]
    assert first[0][0] == ids[4]
    engram.memories.delete(ids[4], LOCAL)
    with a.db.reader() as conn:  # the copy as refreshed before the delete
        after = a._copy.search(conn, "m16", vecs[4], asks, refresh=False).hits[0]
    assert ids[4] not in [memory_id for memory_id, _ in after]


def test_the_exact_stage_reads_vectors_by_key_before_the_tables_are_analyzed(
    pg_url: str,
) -> None:
    """Right after a bulk load PostgreSQL has no statistics yet (autovacuum analyzes later):
    the exact stage must still read the kept rows' vectors by key, not scan every vector of the
    model (at 100k memories that plan took 370-520 ms a search until autovacuum came)."""
    store = PostgresStore(pg_url)
    try:
        engram = Engram(store, clock=FakeClock())
        ids, vecs = _add(engram, store, 1000, 9)
        for seed in (10, 11):
            _add(engram, store, 1000, seed)
        with store.db.reader() as conn:
            seqs = [
                r[0]
                for r in conn.execute("SELECT seq FROM memories ORDER BY seq LIMIT 150").fetchall()
            ]
            analyzed = conn.execute(
                "SELECT count(*) FROM pg_stat_user_tables WHERE relname IN "
                "('memories', 'memory_vectors') AND (last_analyze IS NOT NULL "
                "OR last_autoanalyze IS NOT NULL)"
            ).fetchone()
            assert analyzed is not None and analyzed[0] == 0  # the case this test is about
            statement = vector_copy.exact_statement("m16", 16)
            params = (pgv.Embedding(vecs[0]), seqs, [ids[0]])
            plan = "\n".join(
                r[0] for r in conn.execute(psycopg.sql.SQL("EXPLAIN ") + statement, params)
            )
            found = vector_copy.exact(conn, "m16", vecs[0], seqs, [ids[0]])
        scans = [line.strip() for line in plan.splitlines() if "memory_vectors" in line]
        assert scans and all("memory_vectors_pkey" in line for line in scans), plan
        assert {r.seq for r in found} == set(seqs)  # every one of them has a vector
        assert [round(r.score, 5) for r in found if r.memory_id == ids[0]] == [1.0]
    finally:
        store.close()


def test_the_stores_statements_run_without_parallel_workers(pg_url: str) -> None:
    """A parallel plan pays a worker's start (about 5 ms) per statement; the planner picks one
    from estimates (at 100k memories, before autovacuum had analyzed a bulk load, the copy's
    refresh: 7 ms instead of 0.1, on every search). Even with parallelism made to look free,
    the store's connections plan every statement in one backend, without JIT."""
    store = PostgresStore(pg_url)
    try:
        engram = Engram(store, clock=FakeClock())
        _add(engram, store, 500, 12)
        with store.db.reader() as conn:
            for cheap in ("parallel_setup_cost", "parallel_tuple_cost"):
                conn.execute(f"SET {cheap} = 0")
            conn.execute("SET min_parallel_table_scan_size = 0")
            conn.execute("SET min_parallel_index_scan_size = 0")
            plan = "\n".join(
                r[0] for r in conn.execute("EXPLAIN SELECT count(*) FROM memories").fetchall()
            )
            jit = conn.execute("SHOW jit").fetchone()
            conn.execute("RESET ALL")
        assert "Gather" not in plan and "Parallel" not in plan, plan
        assert jit is not None and jit[0] == "off"
    finally:
        store.close()
