"""Exact vector search for the SQLite store: an in-memory float32 matrix per embedding model,
loaded from ``memory_vectors`` and refreshed incrementally.

Rows carry a ``rev`` from a store-wide counter, bumped whenever a vector is written *or its
memory changes* (so the environment, layer and status kept beside each row stay current); a
refresh reads only rows newer than the last one. A purge bumps ``vector_epoch`` and the next
search reloads in full. Several processes may share the file: each keeps its own matrix and
catches up on its next search.

Filtering by environment, layer and status happens in numpy on the whole matrix. Up to
``PROJECT_FROM`` rows the scan is exact. Beyond, the scan is two-stage: the matrix is also kept
projected onto its 128 principal directions (fitted on a sample, refitted when the matrix has
doubled; a fit costs the one search that triggers it a few hundred ms at 100k), the projection
picks ``4 × limit`` (at least 400) candidates and those are re-scored exactly, so the scores
returned are exact cosines. At 100k × 384 this cuts the scan from about 7 ms to 2 ms (memory
bandwidth); the exact top 100 lands in the 400 picked for 99.5 % of queries on random-word
synthetic data and 100 % on LoCoMo turns. No ANN index is used: the scan stays exact in what it
returns, filterable, and free of build time (see bench/latency).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.models import Layer, Status

Vector = npt.NDArray[np.float32]

PROJECT_FROM = 20_000
"""Rows from which the two-stage scan is used (below, the exact scan is as fast)."""
PROJECTED_DIMS = 128
FIT_SAMPLE = 20_000

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
        # the two-stage scan: rows projected onto ``basis`` (dim × r), fitted at ``fitted_at``
        self.basis: Vector | None = None
        self.low: Vector | None = None
        self.fitted_at = 0

    def _grow(self) -> None:
        self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])
        if self.low is not None:
            self.low = np.concatenate([self.low, np.zeros_like(self.low)])
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
            if self.basis is not None and self.low is not None:
                self.low[row] = vector @ self.basis
        self.env[row] = env
        self.layer[row] = layer
        self.status[row] = status

    def fit_projection(self, project_from: int) -> None:
        """(Re)fit the projection once the matrix is large enough, and again each time it has
        doubled: the top principal directions of the (uncentred) rows, which preserve dot
        products best."""
        if self.dim <= 2 * PROJECTED_DIMS or self.n < project_from:
            return
        if self.basis is not None and self.n < 2 * self.fitted_at:
            return
        rows = self.mat[: self.n]
        if self.n > FIT_SAMPLE:
            pick = np.random.default_rng(self.n).choice(self.n, FIT_SAMPLE, replace=False)
            rows = rows[np.sort(pick)]
        second_moment = rows.T.astype(np.float64) @ rows.astype(np.float64)
        _, vectors = np.linalg.eigh(second_moment)  # ascending eigenvalues
        self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :PROJECTED_DIMS], dtype=np.float32)
        self.low = np.zeros((len(self.mat), PROJECTED_DIMS), dtype=np.float32)
        self.low[: self.n] = self.mat[: self.n] @ self.basis
        self.fitted_at = self.n


class VectorIndex:
    """Process-local cache of the vectors in one SQLite file."""

    def __init__(self, project_from: int = PROJECT_FROM) -> None:
        self._project_from = project_from
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
        if matrix is not None:
            matrix.fit_projection(self._project_from)
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
            q = query.astype(np.float32)
            key = (model_id, self._epoch, matrix.rev, n, matrix.fitted_at, query.tobytes())
            if self._memo is not None and self._memo[0] == key:
                scores = self._memo[1]
            elif matrix.basis is not None and matrix.low is not None:
                scores = matrix.low[:n] @ (q @ matrix.basis)  # first stage: approximate
                self._memo = (key, scores)
            else:
                scores = matrix.mat[:n] @ q
                self._memo = (key, scores)
            candidates = self._rows(matrix, model_id, env_ids, layers, statuses)
            if candidates.size == 0:
                return []
            if matrix.basis is not None:
                pool = min(candidates.size, max(4 * limit, 400))
                if pool < candidates.size:
                    candidates = candidates[np.argpartition(-scores[candidates], pool - 1)[:pool]]
                exact = matrix.mat[candidates] @ q  # second stage: exact cosines
            else:
                exact = scores[candidates]
            k = min(limit, candidates.size)
            top = np.argpartition(-exact, k - 1)[:k]
            top = top[np.argsort(-exact[top])]
            return [(matrix.ids[candidates[i]], float(exact[i])) for i in top]

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
