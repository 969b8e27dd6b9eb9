"""PostgreSQL bulk loads of vectors: no index to build (search scans each process's copy,
store/postgres/vector_copy.py), so what is stored is searchable at once, by this process and by
another, and the HNSW indexes an older schema built are gone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.store import EmbeddingUpdate
from engram.store.postgres import PostgresStore
from tests.conftest import FakeClock

MODEL = "m16"
DIM = 16


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()


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

    def search(self, q: np.ndarray, k: int, store: PostgresStore | None = None) -> list[str]:
        flt = MemoryFilter(environment_ids=[self.env.id])
        found = (store or self.store).vector_search(q, MODEL, flt, limit=k)
        return [h.memory_id for h in found]

    def query(self) -> np.ndarray:
        q = self.rng.standard_normal(DIM).astype(np.float32)
        return q / np.linalg.norm(q)


def test_a_bulk_load_is_searchable_as_it_is_stored_here_and_by_another_process(
    pg_store: PostgresStore, pg_url: str
) -> None:
    other = PostgresStore(pg_url)
    try:
        load = Loader(pg_store)
        load.add(2500)
        for batch, _ in enumerate(load.batches()):
            if batch % 4 == 0:  # mid-load: what is stored is what a search finds, exactly
                for store in (pg_store, other):
                    q = load.query()
                    assert load.search(q, 10, store) == load.nearest(q, 10)
        for store in (pg_store, other):
            for _ in range(5):
                q = load.query()
                assert load.search(q, 10, store) == load.nearest(q, 10)
        assert other._copy.rows_read == len(load.vectors) == 2500  # each row read once
    finally:
        other.close()


def test_no_hnsw_index_is_left(pg_store: PostgresStore) -> None:
    load = Loader(pg_store)
    load.add(300)
    load.store_all()
    with pg_store.db.reader() as conn:
        rows = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memory_vectors'"
        ).fetchall()
        assert rows and not [r for r in rows if "hnsw" in r[0]]
        assert conn.execute("SELECT to_regclass('vector_indexes')").fetchone() == (None,)
