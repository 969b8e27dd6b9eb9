"""Exact vector search for the SQLite store: an in-memory float32 matrix per embedding model,
loaded from ``memory_vectors`` and refreshed incrementally.

Rows carry a ``rev`` from a store-wide counter, bumped whenever a vector is written *or its
memory changes* (so the environment, layer and status kept beside each row stay current); a
refresh reads only rows newer than the last one. A purge bumps ``vector_epoch`` and the next
search reloads in full. Several processes may share the file: each keeps its own matrix and
catches up on its next search.

Filtering by environment, layer and status happens in numpy on the whole matrix; measured at
100k memories, the exact scan costs a few milliseconds, so no ANN index is used (see
bench/latency).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.models import Layer, Status

Vector = npt.NDArray[np.float32]

_LAYERS = {layer.value: i for i, layer in enumerate(Layer)}
_STATUSES = {status.value: i for i, status in enumerate(Status)}


class _Matrix:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self.mat: Vector = np.zeros((1024, dim), dtype=np.float32)
        self.env = np.zeros(1024, dtype=np.int32)
        self.layer = np.zeros(1024, dtype=np.int8)
        self.status = np.zeros(1024, dtype=np.int8)
        self.ids: list[str] = []
        self.row_of: dict[str, int] = {}
        self.rev = 0

    def _grow(self) -> None:
        self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
        self.env = np.concatenate([self.env, np.zeros_like(self.env)])
        self.layer = np.concatenate([self.layer, np.zeros_like(self.layer)])
        self.status = np.concatenate([self.status, np.zeros_like(self.status)])

    def put(self, memory_id: str, env: int, layer: int, status: int, vector: Vector | None) -> None:
        row = self.row_of.get(memory_id)
        if row is None:
            if vector is None:
                return
            if self.n == len(self.mat):
                self._grow()
            row = self.n
            self.n += 1
            self.row_of[memory_id] = row
            self.ids.append(memory_id)
        if vector is not None:
            self.mat[row] = vector
        self.env[row] = env
        self.layer[row] = layer
        self.status[row] = status


class VectorIndex:
    """Process-local cache of the vectors in one SQLite file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, _Matrix] = {}
        self._env_codes: dict[str, int] = {}
        self._epoch = -1
        self._seen: dict[tuple[int, str], int] = {}  # (connection, model) -> data_version
        self._rows_cache: dict[tuple[object, ...], npt.NDArray[np.intp]] = {}
        # the last query's scores: context assembly asks once per layer with the same vector
        self._memo: tuple[object, npt.NDArray[np.float32]] | None = None

    def _code(self, env_id: str) -> int:
        code = self._env_codes.get(env_id)
        if code is None:
            code = self._env_codes[env_id] = len(self._env_codes) + 1
        return code

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
            self._models.clear()
            self._epoch = epoch
        matrix = self._models.get(model_id)
        since = matrix.rev if matrix is not None else 0
        rows = conn.execute(
            "SELECT m.id, m.environment_id, m.layer, m.status, v.dim, v.vector, v.rev "
            "FROM memory_vectors v JOIN memories m ON m.seq = v.memory_seq "
            "WHERE v.model_id = ? AND v.rev > ? ORDER BY v.rev",
            (model_id, since),
        ).fetchall()
        for memory_id, env_id, layer, status, dim, blob, rev in rows:
            if matrix is None:
                matrix = self._models[model_id] = _Matrix(dim)
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape[0] != matrix.dim:
                continue  # a vector of another size cannot belong to this model; skip it
            matrix.put(memory_id, self._code(env_id), _LAYERS[layer], _STATUSES[status], vector)
            matrix.rev = rev
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
            if matrix is None or matrix.n == 0 or query.shape[0] != matrix.dim:
                return []
            n = matrix.n
            key = (model_id, self._epoch, matrix.rev, n, query.tobytes())
            if self._memo is not None and self._memo[0] == key:
                scores = self._memo[1]
            else:
                scores = matrix.mat[:n] @ query.astype(np.float32)
                self._memo = (key, scores)
            candidates = self._rows(matrix, model_id, env_ids, layers, statuses)
            if candidates.size == 0:
                return []
            k = min(limit, candidates.size)
            picked = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
            picked = picked[np.argsort(-scores[picked])]
            return [(matrix.ids[i], float(scores[i])) for i in picked]

    def _rows(
        self,
        matrix: _Matrix,
        model_id: str,
        env_ids: Sequence[str],
        layers: Sequence[Layer],
        statuses: Sequence[Status],
    ) -> npt.NDArray[np.intp]:
        """Rows passing the filter; cached until the matrix changes (the same filters recur
        across queries and across the layers of one context assembly)."""
        key = (
            model_id,
            self._epoch,
            matrix.rev,
            matrix.n,
            tuple(env_ids),
            tuple(layers),
            tuple(statuses),
        )
        cached = self._rows_cache.get(key)
        if cached is not None:
            return cached
        n = matrix.n
        mask = np.ones(n, dtype=bool)
        if env_ids:
            codes = [self._env_codes[e] for e in env_ids if e in self._env_codes]
            mask &= np.isin(matrix.env[:n], codes)
        if layers:
            mask &= np.isin(matrix.layer[:n], [_LAYERS[x.value] for x in layers])
        if statuses:
            mask &= np.isin(matrix.status[:n], [_STATUSES[x.value] for x in statuses])
        rows = np.flatnonzero(mask)
        if len(self._rows_cache) >= 64:
            self._rows_cache.clear()
        self._rows_cache[key] = rows
        return rows

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
            rows = [(i, matrix.row_of[i]) for i in memory_ids if i in matrix.row_of]
            if not rows:
                return {}
            sims = matrix.mat[[r for _, r in rows]] @ query.astype(np.float32)
            return {i: float(s) for (i, _), s in zip(rows, sims, strict=True)}
