"""PostgreSQL bulk loads of vectors (store/postgres/hnsw.py): the HNSW index is deferred while
many vectors arrive, search scans exactly meanwhile, and the index is built once they are in."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from psycopg import sql

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.store import EmbeddingUpdate
from engram.store.postgres import PostgresStore, hnsw
from tests.conftest import FakeClock

MODEL = "m16"
DIM = 16


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()


def _hnsw_index(store: PostgresStore) -> tuple[str, bool] | None:
    """(definition, valid) of the model's HNSW index, if it exists."""
    with store.db.reader() as conn:
        row = conn.execute(
            "SELECT pg_get_indexdef(c.oid), i.indisvalid FROM pg_class c "
            "JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = %s",
            (hnsw.index_name(MODEL, DIM),),
        ).fetchone()
    return (str(row[0]), bool(row[1])) if row else None


def _state(store: PostgresStore) -> str | None:
    with store.db.reader() as conn:
        row = conn.execute(
            "SELECT state FROM vector_indexes WHERE model_id = %s", (MODEL,)
        ).fetchone()
    return str(row[0]) if row else None


def _wait_ready(store: PostgresStore, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not store.vector_indexes_ready():
        assert time.monotonic() < deadline, "the HNSW index was not built in time"
        time.sleep(0.05)


class Loader:
    """Memories in one environment and their vectors, stored as the indexer does: pending
    memories in order, in batches of 256."""

    def __init__(self, store: PostgresStore, seed: int = 3) -> None:
        self.store = store
        self.engram = Engram(store, clock=FakeClock())
        self.env = self.engram.environments.create("bulk", LOCAL)
        self.rng = np.random.default_rng(seed)
        self.vectors: dict[str, np.ndarray] = {}

    def add(self, count: int) -> None:
        for start in range(0, count, 500):
            self.engram.memories.add_many(
                [NewMemory(content=f"memory {start + i}") for i in range(min(500, count - start))],
                LOCAL,
                "bulk",
            )

    def batches(self) -> Iterator[int]:
        """Store the pending vectors; yield after each batch how many are still pending."""
        after = 0
        while True:
            pending = self.store.pending_embeddings(MODEL, limit=256, after=after)
            if not pending:
                return
            vecs = self.rng.standard_normal((len(pending), DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            self.vectors.update((p.memory_id, v) for p, v in zip(pending, vecs, strict=True))
            self.store.put_embeddings(
                MODEL,
                [
                    EmbeddingUpdate(p.memory_id, p.content_hash, v)
                    for p, v in zip(pending, vecs, strict=True)
                ],
            )
            after = pending[-1].position
            yield len(self.store.pending_embeddings(MODEL, limit=10_000, after=after))

    def store_all(self) -> None:
        for _ in self.batches():
            pass

    def nearest(self, q: np.ndarray, k: int) -> list[str]:
        ids = list(self.vectors)
        mat = np.stack([self.vectors[i] for i in ids])
        return [ids[i] for i in np.argsort(-(mat @ q), kind="stable")[:k]]

    def search(self, q: np.ndarray, k: int) -> list[str]:
        flt = MemoryFilter(environment_ids=[self.env.id])
        return [h.memory_id for h in self.store.vector_search(q, MODEL, flt, limit=k)]

    def query(self) -> np.ndarray:
        q = self.rng.standard_normal(DIM).astype(np.float32)
        return q / np.linalg.norm(q)


def test_a_bulk_load_defers_the_index_searches_exactly_then_builds_it(
    pg_store: PostgresStore,
) -> None:
    load = Loader(pg_store)
    load.add(hnsw.BULK_FROM + 500)
    seen_deferred = False
    for left in load.batches():
        if left:
            # mid-load: no index yet, and vector search is the exact scan of what is stored
            assert _state(pg_store) == "deferred" and _hnsw_index(pg_store) is None
            q = load.query()
            assert load.search(q, 10) == load.nearest(q, 10)
            seen_deferred = True
    assert seen_deferred
    _wait_ready(pg_store)
    index = _hnsw_index(pg_store)
    assert index is not None and index[1] and "hnsw" in index[0]
    assert "m='16'" in index[0] and "ef_construction='32'" in index[0]
    assert _state(pg_store) == "ready"
    for _ in range(5):  # the built index finds what the exact scan finds
        q = load.query()
        assert load.search(q, 5) == load.nearest(q, 5)


def test_a_small_batch_goes_through_the_index_and_a_large_load_rebuilds_it(
    pg_store: PostgresStore,
) -> None:
    load = Loader(pg_store)
    load.add(300)  # a first batch of few vectors creates the index at once
    load.store_all()
    assert _state(pg_store) == "ready" and _hnsw_index(pg_store) is not None
    load.add(200)  # few more: inserted through the index
    for _ in load.batches():
        assert _state(pg_store) == "ready" and _hnsw_index(pg_store) is not None
    load.add(hnsw.BULK_FROM + 300)  # many more than indexed: defer, then rebuild
    states = [(_state(pg_store), _hnsw_index(pg_store) is None) for _ in load.batches()]
    assert states[0] == ("deferred", True)
    _wait_ready(pg_store)
    index = _hnsw_index(pg_store)
    assert index is not None and index[1]
    q = load.query()
    assert load.search(q, 5) == load.nearest(q, 5)
    with pg_store.db.reader() as conn:
        count = conn.execute("SELECT count(*) FROM memory_vectors").fetchone()
    assert count is not None and count[0] == len(load.vectors) == 300 + 200 + hnsw.BULK_FROM + 300


def test_a_build_replaces_an_invalid_index_left_by_a_build_that_died(
    pg_store: PostgresStore,
) -> None:
    load = Loader(pg_store)
    load.add(50)
    load.store_all()
    target = hnsw.Target(MODEL, DIM)
    with pg_store.db.connection() as conn:
        conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(target.name)))
        conn.execute("UPDATE vector_indexes SET state = 'deferred'")
        # a concurrent build that failed leaves an INVALID index under the name
        with pytest.raises(Exception, match="could not create unique index"):
            conn.execute(
                sql.SQL("CREATE UNIQUE INDEX CONCURRENTLY {} ON memory_vectors (model_id)").format(
                    sql.Identifier(target.name)
                )
            )
    assert _hnsw_index(pg_store) is not None and not _hnsw_index(pg_store)[1]  # type: ignore[index]
    assert not pg_store.vector_indexes_ready()
    assert hnsw.build(pg_store.db, target)
    index = _hnsw_index(pg_store)
    assert index is not None and index[1] and "hnsw" in index[0]
    assert pg_store.vector_indexes_ready()
