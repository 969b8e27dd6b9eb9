"""The SQLite store's two-stage vector scan (store/sqlite/vectors.py): once the matrix is large,
a projection picks candidates and they are re-scored exactly. What it returns must match the
exact scan: the same ids in the same order, with exact cosines, through refits and filters."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory
from engram.store import EmbeddingUpdate
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.vectors import PROJECTED_DIMS, VectorIndex
from tests.conftest import FakeClock

MODEL = "clustered-384"
DIM = 384


def clustered(rng: np.random.Generator, n: int, centres: npt.NDArray[np.float32]) -> np.ndarray:
    # texts about a few topics: vectors near one of a few centres, plus a shared component
    picks = rng.integers(0, len(centres), n)
    x = centres[picks] + 0.35 * rng.standard_normal((n, DIM)) + 0.8
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def fill(engram: Engram, store: SQLiteStore, vectors: np.ndarray, env: str) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(vectors), 500):
        batch = [
            NewMemory(content=f"memory {i}", layer=Layer.FACT if i % 4 else Layer.EPISODE)
            for i in range(start, min(len(vectors), start + 500))
        ]
        ids += [m.id for m in engram.memories.add_many(batch, LOCAL, env)]
    pending = {p.memory_id: p for p in store.pending_embeddings(MODEL, limit=len(vectors) * 2)}
    store.put_embeddings(
        MODEL,
        [
            EmbeddingUpdate(i, pending[i].content_hash, v)
            for i, v in zip(ids, vectors, strict=True)
            if i in pending
        ],
    )
    return ids


@pytest.mark.slow
def test_two_stage_scan_returns_the_exact_top_k(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((12, DIM)).astype(np.float32)
    store = SQLiteStore(tmp_path / "v.db")
    store._vectors = VectorIndex(project_from=1000)
    engram = Engram(store, clock=FakeClock())
    env = engram.environments.create("big", LOCAL)
    other = engram.environments.create("other", LOCAL)
    vectors = clustered(rng, 1600, centres)
    ids = fill(engram, store, vectors, "big")
    fill(engram, store, clustered(rng, 200, centres), "other")
    queries = clustered(rng, 25, centres)

    def check(n_rows: int) -> None:
        layer = np.array([i % 4 != 0 for i in range(n_rows)])
        for q in queries:
            for layers, mask in (([], np.ones(n_rows, bool)), ([Layer.FACT], layer)):
                flt = MemoryFilter(environment_ids=[env.id], layers=layers)
                got = store.vector_search(q, MODEL, flt, limit=20)
                scores = vectors[:n_rows] @ q
                scores[~mask] = -np.inf
                want = np.argsort(-scores, kind="stable")[:20]
                assert [h.memory_id for h in got] == [ids[i] for i in want]
                assert np.allclose([h.score for h in got], scores[want], atol=1e-5)

    check(1600)
    matrix = store._vectors._models[MODEL]
    assert matrix.basis is not None and matrix.basis.shape == (DIM, PROJECTED_DIMS)
    fitted = matrix.fitted_at
    assert fitted >= 1000
    # the matrix doubles: the projection is refitted, and rows added since are projected too
    more = clustered(rng, 2000, centres)
    ids += fill(engram, store, more, "big")
    vectors = np.concatenate([vectors, more])
    check(3600)
    assert store._vectors._models[MODEL].fitted_at > fitted
    hits = store.vector_search(queries[0], MODEL, MemoryFilter(environment_ids=[other.id]), limit=5)
    assert len(hits) == 5 and not {h.memory_id for h in hits} & set(ids)
    store.close()


def test_small_matrices_and_small_models_stay_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    store = SQLiteStore(tmp_path / "v.db")
    store._vectors = VectorIndex(project_from=1000)
    engram = Engram(store, clock=FakeClock())
    engram.environments.create("e", LOCAL)
    fill(engram, store, clustered(rng, 600, rng.standard_normal((5, DIM)).astype(np.float32)), "e")
    store.vector_search(np.ones(DIM, np.float32) / np.sqrt(DIM), MODEL, MemoryFilter(), limit=5)
    assert store._vectors._models[MODEL].basis is None  # below project_from
    store.close()
