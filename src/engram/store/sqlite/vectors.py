"""Exact vector search for the SQLite store: an in-memory float32 matrix per embedding model,
loaded from ``memory_vectors`` and refreshed incrementally.

Rows carry a ``rev`` from a store-wide counter, so a refresh reads only what changed since the
last one; a purge bumps ``vector_epoch`` and the next search reloads in full. Several processes
may share the file: each keeps its own matrix and catches up on its next search.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]


class _Matrix:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self.mat: Vector = np.zeros((1024, dim), dtype=np.float32)
        self.env: npt.NDArray[np.int32] = np.zeros(1024, dtype=np.int32)
        self.ids: list[str] = []
        self.row_of: dict[int, int] = {}  # memory seq -> row
        self.row_of_id: dict[str, int] = {}
        self.rev = 0

    def put(self, seq: int, memory_id: str, env_code: int, vector: Vector) -> None:
        row = self.row_of.get(seq)
        if row is None:
            if self.n == len(self.mat):
                self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
                self.env = np.concatenate([self.env, np.zeros_like(self.env)])
            row = self.n
            self.n += 1
            self.row_of[seq] = row
            self.row_of_id[memory_id] = row
            self.ids.append(memory_id)
        self.mat[row] = vector
        self.env[row] = env_code


class VectorIndex:
    """Process-local cache of the vectors in one SQLite file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, _Matrix] = {}
        self._env_codes: dict[str, int] = {}
        self._epoch = -1

    def _code(self, env_id: str) -> int:
        code = self._env_codes.get(env_id)
        if code is None:
            code = self._env_codes[env_id] = len(self._env_codes) + 1
        return code

    def _refresh(self, conn: sqlite3.Connection, model_id: str) -> _Matrix | None:
        epoch = conn.execute("SELECT value FROM store_meta WHERE key = 'vector_epoch'").fetchone()[
            0
        ]
        if epoch != self._epoch:
            self._models.clear()
            self._epoch = epoch
        matrix = self._models.get(model_id)
        since = matrix.rev if matrix is not None else 0
        rows = conn.execute(
            "SELECT v.memory_seq, m.id, v.environment_id, v.dim, v.vector, v.rev "
            "FROM memory_vectors v JOIN memories m ON m.seq = v.memory_seq "
            "WHERE v.model_id = ? AND v.rev > ? ORDER BY v.rev",
            (model_id, since),
        ).fetchall()
        for seq, memory_id, env_id, dim, blob, rev in rows:
            if matrix is None:
                matrix = self._models[model_id] = _Matrix(dim)
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] != matrix.dim:
                continue  # a vector of another size cannot belong to this model; skip it
            matrix.put(seq, memory_id, self._code(env_id), vector)
            matrix.rev = rev
        return matrix

    def search(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: Vector,
        env_ids: list[str],
        limit: int,
    ) -> list[tuple[str, float]]:
        """Top ``limit`` (memory id, cosine) among vectors of ``model_id`` in ``env_ids``
        (all environments when empty). Vectors are stored normalised, so a dot product is the
        cosine."""
        with self._lock:
            matrix = self._refresh(conn, model_id)
            if matrix is None or matrix.n == 0:
                return []
            if query.shape[0] != matrix.dim:
                return []
            scores = matrix.mat[: matrix.n] @ query.astype(np.float32)
            if env_ids:
                codes = [self._env_codes[e] for e in env_ids if e in self._env_codes]
                mask = np.isin(matrix.env[: matrix.n], codes)
                scores = np.where(mask, scores, -np.inf)
            k = min(limit, matrix.n)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top])]
            return [(matrix.ids[i], float(scores[i])) for i in top if np.isfinite(scores[i])]

    def scores_for(
        self,
        conn: sqlite3.Connection,
        model_id: str,
        query: Vector,
        memory_ids: Sequence[str],
    ) -> dict[str, float]:
        """Cosine of ``query`` to each listed memory that has a vector of ``model_id``."""
        with self._lock:
            matrix = self._refresh(conn, model_id)
            if matrix is None or query.shape[0] != matrix.dim:
                return {}
            rows = [(i, matrix.row_of_id[i]) for i in memory_ids if i in matrix.row_of_id]
            if not rows:
                return {}
            sims = matrix.mat[[r for _, r in rows]] @ query.astype(np.float32)
            return {i: float(s) for (i, _), s in zip(rows, sims, strict=True)}
