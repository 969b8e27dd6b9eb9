"""The SQLite store's two-stage vector scan (store/sqlite/vectors.py): once the matrix is large,
a projection picks candidates and they are re-scored exactly. What it returns must match the
exact scan: the same ids in the same order, with exact cosines, through refits and filters."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, MemoryPatch, NewMemory, Status
from engram.store import EmbeddingUpdate
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.vectors import PROJECTED_DIMS, VectorIndex
from tests.conftest import FakeClock

MODEL = "clustered-384"
WRITTEN = itertools.count()  # every memory's text differs (a vector is a function of its text)
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
            NewMemory(
                content=f"memory {next(WRITTEN)}", layer=Layer.FACT if i % 4 else Layer.EPISODE
            )
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


def exact_top(
    store: SQLiteStore, query: np.ndarray, limit: int, statuses: tuple[str, ...] = ("active",)
) -> list[str]:
    """The exact scan: every stored float32 vector of the model, in the given statuses."""
    marks = ",".join("?" * len(statuses))
    rows = (
        store.db.reader()
        .execute(
            "SELECT m.id, v.vector FROM memory_vectors v JOIN memories m ON m.seq = v.memory_seq "
            f"WHERE v.model_id = ? AND m.status IN ({marks})",
            (MODEL, *statuses),
        )
        .fetchall()
    )
    scores = np.array([float(np.frombuffer(r[1], dtype=np.float32) @ query) for r in rows])
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i][0]))[:limit]
    return [rows[i][0] for i in order]


def compact(store: SQLiteStore, query: np.ndarray, limit: int) -> list[str]:
    flt = MemoryFilter(statuses=[Status.ACTIVE])
    return [h.memory_id for h in store.vector_search(query, MODEL, flt, limit=limit)]


def open_scan(path: Path) -> tuple[SQLiteStore, Engram]:
    store = SQLiteStore(path)
    store._vectors = VectorIndex(Path(f"{path}.vectors"), project_from=1000)
    return store, Engram(store, clock=FakeClock())


@pytest.mark.slow
def test_compact_scan_equals_the_exact_scan_and_follows_writes_and_restarts(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((8, DIM)).astype(np.float32)
    path = tmp_path / "v.db"
    store, engram = open_scan(path)
    engram.environments.create("e", LOCAL)
    ids = fill(engram, store, clustered(rng, 3000, centres), "e")
    queries = clustered(rng, 12, centres)

    def same(limits: tuple[int, ...] = (10, 100)) -> None:
        for q in queries:
            for limit in limits:
                assert compact(store, q, limit) == exact_top(store, q, limit)

    same()
    assert store._vectors._models[MODEL].basis is not None  # the projected first stage ran
    # adds: new rows are searchable at the next search
    near = queries[0] + 0.01 * rng.standard_normal(DIM).astype(np.float32)
    added = fill(engram, store, (near / np.linalg.norm(near))[None, :], "e")
    assert compact(store, queries[0], 1) == added
    # deletes: a deleted memory leaves the active results; a purged one leaves the store
    engram.memories.delete(added[0], LOCAL)
    assert added[0] not in compact(store, queries[0], 10)
    top = compact(store, queries[1], 1)[0]
    engram.memories.purge([top], LOCAL)
    assert top not in compact(store, queries[1], 100)
    # updates: a memory whose content changed gets its new vector, not the old one
    moved = ids[5]
    engram.memories.update(moved, MemoryPatch(content="moved elsewhere"), LOCAL)
    pending = {p.memory_id: p for p in store.pending_embeddings(MODEL, limit=10)}
    store.put_embeddings(MODEL, [EmbeddingUpdate(moved, pending[moved].content_hash, queries[2])])
    assert compact(store, queries[2], 1) == [moved]
    same()
    store.close()
    saved = list(Path(f"{path}.vectors").glob("*.npz"))
    assert len(saved) == 1 and saved[0].stat().st_mode & 0o077 == 0  # private, as the database

    # a restart loads the copy kept on close and reads only what was written after it
    store, engram = open_scan(path)
    more = clustered(rng, 40, centres)
    later = fill(engram, store, more, "e")
    same()
    assert store._vectors.rows_read == len(later)
    assert compact(store, more[0], 1) == [later[0]]
    store.close()


def test_a_purge_deletes_the_copy_on_disk_and_a_copy_ahead_of_the_database_is_ignored(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((4, DIM)).astype(np.float32)
    path = tmp_path / "v.db"
    store, engram = open_scan(path)
    engram.environments.create("e", LOCAL)
    ids = fill(engram, store, clustered(rng, 300, centres), "e")
    q = clustered(rng, 1, centres)[0]
    store.vector_search(q, MODEL, MemoryFilter(), limit=5)
    store.close()
    cache = Path(f"{path}.vectors")
    assert list(cache.glob("*.npz"))
    store, engram = open_scan(path)
    engram.memories.purge([ids[0]], LOCAL)
    assert not list(cache.glob("*.npz"))  # the purged vector survives in no cache
    assert ids[0] not in compact(store, q, 300)
    store.close()

    # an older copy of the database (a restored backup) beside a newer vector file: the new
    # memories written after the restore take the seqs the file knows with other vectors
    backup = tmp_path / "backup"
    backup.mkdir()
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            shutil.copy(f"{path}{suffix}", backup / f"v.db{suffix}")
    store, engram = open_scan(path)
    fill(engram, store, clustered(rng, 30, centres), "e")
    compact(store, q, 5)
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
        if (backup / f"v.db{suffix}").exists():
            shutil.copy(backup / f"v.db{suffix}", f"{path}{suffix}")
    store, engram = open_scan(path)
    elsewhere = clustered(rng, 30, rng.standard_normal((1, DIM)).astype(np.float32))
    after = fill(engram, store, elsewhere, "e")
    assert compact(store, elsewhere[3], 1) == [after[3]]
    assert compact(store, q, 50) == exact_top(store, q, 50)
    assert store._vectors.rows_read == 299 + 30  # the file was not used
    store.close()


def test_equal_cosines_at_the_limit_are_ordered_by_memory_id(tmp_path: Path) -> None:
    # the exact stage reads ids only for the best rows and those tied with the last of them:
    # a tie across the limit must still keep the smallest ids, in id order
    store = SQLiteStore(tmp_path / "t.db")
    engram = Engram(store, clock=FakeClock())
    env = "ties"
    env_id = engram.environments.create(env, LOCAL).id
    rng = np.random.default_rng(3)
    same = rng.standard_normal(DIM).astype(np.float32)
    same /= np.linalg.norm(same)
    other = rng.standard_normal((3, DIM)).astype(np.float32) * 0.05 + same
    other /= np.linalg.norm(other, axis=1, keepdims=True)
    vectors = np.vstack([np.tile(same, (5, 1)), other])  # five equal best, three near them
    ids = fill(engram, store, vectors, env)
    flt = MemoryFilter(environment_ids=[env_id])
    for limit in (1, 3, 5, 6):
        hits = store.vector_search(same, MODEL, flt, limit=limit)
        assert [h.memory_id for h in hits][: min(limit, 5)] == sorted(ids[:5])[: min(limit, 5)]
        assert len(hits) == limit
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    store.close()


def test_a_change_the_copy_does_not_hold_is_not_read_back(tmp_path: Path) -> None:
    """A merge raises its fact's confidence; a new importance or tag changes nothing the
    in-memory copy holds (environment, layer, status, vector): the next search reads no row
    back (before, every change to a memory with a vector did, so each lifecycle merge cost its
    next search a refresh). A delete still reaches the copy."""
    rng = np.random.default_rng(12)
    centres = rng.standard_normal((4, DIM)).astype(np.float32)
    store, engram = open_scan(tmp_path / "v.db")
    engram.environments.create("e", LOCAL)
    ids = fill(engram, store, clustered(rng, 40, centres), "e")
    query = clustered(rng, 1, centres)[0]
    top = compact(store, query, 1)[0]
    read = store._vectors.rows_read
    engram.memories.update(top, MemoryPatch(importance=0.9, tags=["kept"]), LOCAL)
    assert compact(store, query, 1) == [top]
    assert store._vectors.rows_read == read
    engram.memories.delete(top, LOCAL)
    assert top not in compact(store, query, 40)
    assert store._vectors.rows_read == read + 1 and len(ids) == 40
    store.close()
