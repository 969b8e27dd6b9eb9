"""Vector search for the SQLite store: a compact in-memory copy of each embedding model's
vectors, loaded from ``memory_vectors``, refreshed incrementally and kept on disk beside the
database between runs.

**Compact.** A vector is 8-bit codes and one float scale per row (``dim + 4`` bytes, not
``4 × dim``), in blocks of ``BLOCK`` rows (growing never copies the matrix), known by its
memory's ``seq``: the ids of the few rows returned are read with their float32 vectors.

**Fresh.** Rows carry a ``rev`` from a store-wide counter, bumped whenever a vector is written
*or its memory changes* (so the environment, layer and status kept beside each row stay
current); a refresh reads only rows newer than the last one. A purge bumps ``vector_epoch`` and
the next search reloads in full. Several processes may share the file: each keeps its own copy
and catches up on its next search.

**Search** is a scan, exact in what it returns (the copy and its stages are shared with
PostgreSQL's: :mod:`engram.vectorindex`). Filtering by environment, layer and status
happens in numpy on the whole matrix. Every stage is an 8-bit dot product (numkong's SIMD
kernels: about 6× faster than a float32 matrix product over the same rows):

1. from ``PROJECT_FROM`` rows, a scan of the rows projected onto their 128 principal
   directions (centred; fitted on a sample, refitted when the matrix has doubled) picks a pool
   of ``max(20 × limit, 2,000, min(n / 50, 4,000))`` candidates (``vector_pool``);
2. the full 8-bit codes re-score the pool and keep ``limit + max(limit / 2, 32)``;
3. those are re-scored exactly from their float32 blobs in SQLite, so the scores returned are
   exact cosines and the order is the exact order among them.

An HNSW graph (usearch) and an inverted-file partition were measured and rejected (README:
recall@10 0.30-0.85 against this scan at 50k; HNSW inserts at 140-630/s on 2 cores).

**Kept between runs.** ``save`` (called when the store closes) writes the codes, the
projection and the ``rev`` they reflect to ``<database>.vectors/``; the next process loads
that file (about ``dim + 146`` bytes a row: the codes, the projection and the row data) and
catches up from its ``rev`` instead of re-reading every blob. The file is a cache: a stale
epoch or another history (a restored backup: its newest ``rev`` ahead, or other rows) discards
it; deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engram import heap
from engram.models import Layer, Status
from engram.store.sqlite.rows import in_list
from engram.vectorindex.copies import Copies
from engram.vectorindex.matrix import (
    FIT_SAMPLE,
    LOAD_CHUNK,
    PROJECT_FROM,
    PROJECTED_DIMS,
    Matrix,
    Vector,
)

_Matrix = Matrix
__all__ = ["FIT_SAMPLE", "PROJECTED_DIMS", "VectorIndex", "_Matrix"]


class VectorIndex(Copies):
    """Process-local cache of the vectors in one SQLite file (``cache_dir``: where it is kept
    between runs; ``None`` keeps nothing)."""

    def __init__(self, cache_dir: Path | None = None, project_from: int = PROJECT_FROM) -> None:
        super().__init__(project_from)
        self._cache_dir = cache_dir
        self._seen: dict[tuple[int, str], int] = {}  # (connection, model) -> data_version

    def _file(self, model_id: str) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / (hashlib.sha256(model_id.encode()).hexdigest()[:16] + ".npz")

    def save(self, conn: sqlite3.Connection) -> None:
        """Write every model's copy beside the database (atomically: a reader sees the old
        file or the new one), unless vectors were removed since it was read."""
        if self._cache_dir is None:
            return
        with self._lock:
            if self._epoch < 0 or not self._models:
                return
            sql = "SELECT value FROM store_meta WHERE key = 'vector_epoch'"
            if conn.execute(sql).fetchone()[0] != self._epoch:
                self.discard_saved()
                return
            self._cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            env_ids = sorted(self._env_codes, key=self._env_codes.__getitem__)
            for model_id, matrix in self._models.items():
                path = self._file(model_id)
                assert path is not None
                tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
                arrays = matrix.arrays(env_ids)
                arrays["epoch"] = np.array([self._epoch], dtype=np.int64)
                # 0600 like the database: the codes say what the memories are about
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(fd, "wb") as out:
                    np.savez(out, **arrays)  # type: ignore[arg-type]
                os.replace(tmp, path)

    def discard_saved(self) -> None:
        """Delete the copies kept on disk (vectors were removed: a purged memory's vector must
        not survive in a cache)."""
        if self._cache_dir is None or not self._cache_dir.exists():
            return
        for path in self._cache_dir.glob("*.npz"):
            path.unlink(missing_ok=True)

    def forget(self) -> None:
        super().forget()
        with self._lock:
            self._seen.clear()

    def _refresh(self, conn: sqlite3.Connection, model_id: str) -> _Matrix | None:
        # nothing committed since this connection last looked: the matrix is current
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        seen = (id(conn), model_id)
        if self._seen.get(seen) == version and model_id in self._models:
            return self._models[model_id]
        self._seen[seen] = version
        sql = "SELECT value FROM store_meta WHERE key = 'vector_epoch'"
        epoch = conn.execute(sql).fetchone()[0]
        if epoch != self._epoch:
            if self._epoch >= 0:
                self.discard_saved()
            self._models.clear()
            self._epoch = epoch
        matrix = self._models.get(model_id)
        if matrix is None:
            matrix = self._load_epoch(conn, model_id, epoch)
            if matrix is not None:
                self._models[model_id] = matrix
        cursor = conn.execute(
            "SELECT v.memory_seq, m.environment_id, m.layer, m.status, v.dim, v.vector, v.rev, "
            "v.content_hash "
            "FROM memory_vectors v JOIN memories m ON m.seq = v.memory_seq "
            "WHERE v.model_id = ? AND v.rev > ? ORDER BY v.rev",
            (model_id, matrix.rev if matrix is not None else 0),
        )
        read = 0
        while chunk := cursor.fetchmany(LOAD_CHUNK):
            read += len(chunk)
            if matrix is None:
                matrix = self._models[model_id] = _Matrix(chunk[0][4])
            matrix = self._put_chunk(matrix, chunk)
        self.rows_read += read
        if matrix is not None:
            matrix.fit_projection(self._project_from)
        if read >= heap.BULK_ROWS:  # the chunks' blobs and rows, freed (engram.heap)
            heap.give_back()
        return matrix

    def _load_epoch(self, conn: sqlite3.Connection, model_id: str, epoch: int) -> _Matrix | None:
        path = self._file(model_id)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["epoch"][0]) != epoch:
                    return None
                matrix, env_ids = _Matrix.from_arrays(data)
        except (OSError, ValueError, KeyError):
            return None
        rev = conn.execute("SELECT value FROM store_meta WHERE key = 'vector_rev'").fetchone()
        if rev is None or matrix.rev > int(rev[0]):
            return None  # ahead of the database (a restored backup): not this history
        # a restored backup written to since: its newest revs name other rows than the file's
        if matrix.recent:
            marks = ",".join("?" * len(matrix.recent))
            now = conn.execute(
                "SELECT rev, memory_seq, content_hash FROM memory_vectors "
                f"WHERE model_id = ? AND rev IN ({marks})",
                [model_id, *(r for r, _, _ in matrix.recent)],
            ).fetchall()
            if not set(map(tuple, now)) <= set(matrix.recent):
                return None
        renumber = np.array([0, *(self._code(e) for e in env_ids)], dtype=np.int32)
        matrix.env[: matrix.n] = renumber[matrix.env[: matrix.n]]
        return matrix

    def _put_chunk(self, matrix: _Matrix, chunk: list[tuple[object, ...]]) -> _Matrix:
        self._put(matrix, [r[:6] for r in chunk])  # type: ignore[misc]
        matrix.rev = int(chunk[-1][6])  # type: ignore[call-overload]
        tail = [(int(r[6]), int(r[0]), str(r[7])) for r in chunk[-64:]]  # type: ignore[call-overload]
        matrix.recent = (matrix.recent + tail)[-64:]
        return matrix

    def search(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: Vector,
        limit: int,
        *,
        env_ids: Sequence[str] = (),
        layers: Sequence[Layer] = (),
        statuses: Sequence[Status] = (),
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory id, cosine) among vectors of ``model_id`` in the given
        environments, layers and statuses (each: any when empty). Vectors are stored
        normalised, so a dot product is the cosine."""
        with self._lock:
            matrix = self._refresh(conn, model_id)
            if matrix is None or matrix.n == 0 or query.shape[0] != matrix.dim or limit <= 0:
                return []
            q = query.astype(np.float32)
            seqs = self._shortlist(matrix, model_id, q, limit, env_ids, layers, statuses)
            if seqs.size == 0:
                return []
        return self._exact(conn, model_id, q, seqs, limit)

    @staticmethod
    def _exact(
        conn: sqlite3.Connection,
        model_id: str,
        query: Vector,
        seqs: npt.NDArray[np.int64],
        limit: int,
    ) -> list[tuple[str, float]]:
        """The exact cosines of the rows kept, from their float32 vectors, best ``limit``
        (ties by memory id: the ids are read for those best and any tied with the last)."""
        rows = conn.execute(
            "SELECT memory_seq, vector FROM memory_vectors WHERE model_id = ? AND dim = ? "
            f"AND memory_seq IN ({','.join('?' * len(seqs))})",
            [model_id, query.shape[0], *seqs.tolist()],
        ).fetchall()
        if not rows:
            return []
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        exact = vectors.reshape(len(rows), query.shape[0]) @ query
        last = len(rows) - min(limit, len(rows))
        near = {rows[i][0]: float(exact[i]) for i in np.flatnonzero(exact >= np.sort(exact)[last])}
        marks, params = in_list(list(near))
        ids = conn.execute(f"SELECT id, seq FROM memories WHERE seq IN ({marks})", params)
        return sorted(((i, near[s]) for i, s in ids), key=lambda h: (-h[1], h[0]))[:limit]

    def scores_for(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: Vector,
        memory_ids: Sequence[str],
    ) -> dict[str, float]:
        """Cosine of ``query`` to each listed memory that has a vector of ``model_id``
        (exact: read from the stored float32 vectors)."""
        out: dict[str, float] = {}
        q = query.astype(np.float32)
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):
            marks, chunk = in_list(ids[start : start + 500])
            rows = conn.execute(
                # CROSS JOIN keeps this order: the memories by id, then their vector by key
                "SELECT m.id, v.vector FROM memories m CROSS JOIN memory_vectors v "
                f"ON v.memory_seq = m.seq AND v.model_id = ? WHERE m.id IN ({marks}) "
                "AND v.dim = ?",
                [model_id, *chunk, q.shape[0]],
            ).fetchall()
            if rows:
                vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                sims = vectors.reshape(len(rows), q.shape[0]) @ q
                out.update((r[0], float(s)) for r, s in zip(rows, sims, strict=True))
        return out
