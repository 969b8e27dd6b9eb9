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

**Search** is a scan, exact in what it returns. Filtering by environment, layer and status
happens in numpy on the whole matrix. Every stage is an 8-bit dot product (numkong's SIMD
kernels: about 6× faster than a float32 matrix product over the same rows):

1. from ``PROJECT_FROM`` rows, a scan of the rows projected onto their 128 principal
   directions (centred; fitted on a sample, refitted when the matrix has doubled) picks a pool
   of ``max(20 × limit, 2,000, min(n / 50, 4,000))`` candidates (``vector_pool``), its full
   blocks kept packed for numkong's faster packed product (``packed_scan``);
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
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numkong
import numpy as np
import numpy.typing as npt

from engram import heap
from engram.models import Layer, Status
from engram.store.sqlite import packed_scan, vector_pool
from engram.store.sqlite.packed_scan import PackedBlocks
from engram.store.sqlite.rows import in_list

Vector = npt.NDArray[np.float32]
Rows = npt.NDArray[np.intp]

PROJECT_FROM = 20_000
"""Rows from which the projected first stage is used (below, the full codes are as fast)."""
PROJECTED_DIMS = 128
FIT_SAMPLE = 20_000
FIT_CHUNK = 2048
"""Rows of the sample a fit holds as float64 at once."""
BLOCK_BITS = 14
BLOCK = 1 << BLOCK_BITS
"""Rows per block of codes: the matrix grows a block at a time, never by copying."""
LOAD_CHUNK = 4096
"""Rows read from SQLite at a time when (re)loading: bounds the memory a full load borrows."""
FORMAT = 1

_LAYERS = {layer.value: i for i, layer in enumerate(Layer)}
_STATUSES = {status.value: i for i, status in enumerate(Status)}


def quantize(vectors: Vector) -> tuple[npt.NDArray[np.int8], Vector]:
    """8-bit codes and per-row scales: ``vectors ≈ codes × scale``."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).astype(np.int8)
    return codes, scale


def _query_codes(vector: Vector) -> npt.NDArray[np.int8]:
    peak = float(np.abs(vector).max())
    if peak == 0.0:
        return np.zeros((1, vector.shape[0]), dtype=np.int8)
    codes: npt.NDArray[np.int8] = np.rint(vector * (127.0 / peak)).astype(np.int8)
    return codes.reshape(1, -1)


def _dots(query: npt.NDArray[np.int8], codes: npt.NDArray[np.int8]) -> npt.NDArray[np.float64]:
    """Integer dot products of one 8-bit query with each row of ``codes`` (SIMD)."""
    if codes.shape[0] == 0:
        return np.zeros(0)
    return np.asarray(numkong.cdist(query, codes, metric="dot")).reshape(-1)


class _Matrix:
    """The vectors of one model: 8-bit codes in blocks, and beside each row its memory's seq,
    environment, layer and status."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.n = 0
        self.rev = 0
        # the newest rows read, (rev, seq, content hash): a saved copy is checked against them
        self.recent: list[tuple[int, int, str]] = []
        self.blocks: list[npt.NDArray[np.int8]] = []
        self.scale: Vector = np.zeros(1024, dtype=np.float32)
        self.seqs = np.zeros(1024, dtype=np.int64)
        self.env = np.zeros(1024, dtype=np.int32)
        self.layer = np.zeros(1024, dtype=np.int8)
        self.status = np.zeros(1024, dtype=np.int8)
        # the projected first stage: (row - mean) @ basis, coded per dimension by low_scale
        self.mean: Vector | None = None
        self.basis: Vector | None = None
        self.low_scale: Vector | None = None
        self.low: list[npt.NDArray[np.int8]] = []
        self.packed = PackedBlocks()  # the full blocks of ``low``, packed for the scan
        self.fitted_at = 0
        # seq -> row: seqs sorted up to ``sorted_n`` rows, the rows after scanned directly
        self._order: Rows = np.zeros(0, dtype=np.intp)
        self._sorted: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._sorted_n = 0

    # -- rows ----------------------------------------------------------------------------
    def _reserve(self, n: int) -> None:
        while len(self.blocks) * BLOCK < n:
            self.blocks.append(np.zeros((BLOCK, self.dim), dtype=np.int8))
            if self.basis is not None:
                self.low.append(np.zeros((BLOCK, PROJECTED_DIMS), dtype=np.int8))
        if len(self.seqs) < n:
            size = max(n, 2 * len(self.seqs))
            for name in ("scale", "seqs", "env", "layer", "status"):
                old = getattr(self, name)
                new = np.zeros(size, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)

    def locate(self, seqs: npt.NDArray[np.int64]) -> Rows:
        """The row of each seq, or -1."""
        if self.n - self._sorted_n > 4096:
            self._order = np.argsort(self.seqs[: self.n], kind="stable")
            self._sorted = self.seqs[: self.n][self._order]
            self._sorted_n = self.n
        rows = np.full(len(seqs), -1, dtype=np.intp)
        if self._sorted_n:
            pos = np.minimum(np.searchsorted(self._sorted, seqs), self._sorted_n - 1)
            found = self._sorted[pos] == seqs
            rows[found] = self._order[pos[found]]
        tail = self.seqs[self._sorted_n : self.n]
        if tail.size:
            at = {int(s): self._sorted_n + i for i, s in enumerate(tail)}
            for i in np.flatnonzero(rows < 0):
                rows[i] = at.get(int(seqs[i]), -1)
        return rows

    def put(
        self,
        seqs: npt.NDArray[np.int64],
        env: npt.NDArray[np.int32],
        layer: npt.NDArray[np.int8],
        status: npt.NDArray[np.int8],
        vectors: Vector,
    ) -> None:
        """Write a batch of rows (distinct seqs): new ones appended, known ones replaced."""
        rows = self.locate(seqs)
        new = rows < 0
        count = int(new.sum())
        self._reserve(self.n + count)
        rows[new] = np.arange(self.n, self.n + count)
        self.seqs[rows[new]] = seqs[new]
        self.n += count
        codes, scale = quantize(vectors)
        self.scale[rows] = scale
        self.env[rows] = env
        self.layer[rows] = layer
        self.status[rows] = status
        low = self._project(vectors) if self.basis is not None else None
        for b in np.unique(rows >> BLOCK_BITS):
            inside = (rows >> BLOCK_BITS) == b
            offsets = rows[inside] & (BLOCK - 1)
            self.blocks[b][offsets] = codes[inside]
            if low is not None:
                self.low[b][offsets] = low[inside]
                self.packed.forget(int(b))

    def dequantized(self, start: int, stop: int) -> Vector:
        """Rows ``start:stop`` (within one block) as float32."""
        b, lo = start >> BLOCK_BITS, start & (BLOCK - 1)
        codes = self.blocks[b][lo : lo + stop - start]
        return codes.astype(np.float32) * self.scale[start:stop, None]

    def codes_of(self, rows: Rows) -> npt.NDArray[np.int8]:
        out, block = np.empty((len(rows), self.dim), dtype=np.int8), rows >> BLOCK_BITS
        for b in np.unique(block):  # positions and take, not masks: ~1.8x faster at 2,400 rows
            inside = np.flatnonzero(block == b)
            out[inside] = self.blocks[b].take(rows[inside] & (BLOCK - 1), axis=0)
        return out

    def _block_spans(self) -> Iterable[tuple[int, int]]:
        for b in range(len(self.blocks)):
            start = b * BLOCK
            if start >= self.n:
                return
            yield b, min(BLOCK, self.n - start)

    def scan(self, query: npt.NDArray[np.int8], *, low: bool) -> npt.NDArray[np.int32]:
        """``query``'s dot with every row's full codes, or its projected (``low``) codes."""
        out = np.empty(self.n, dtype=np.int32)
        blocks, packed = (self.low, self.packed) if low else (self.blocks, None)
        packed_scan.scan(query, blocks, self._block_spans(), out, packed)
        return out

    # -- the projection ------------------------------------------------------------------
    def _project(self, vectors: Vector) -> npt.NDArray[np.int8]:
        assert self.mean is not None and self.basis is not None and self.low_scale is not None
        low = (vectors - self.mean) @ self.basis / self.low_scale
        return np.clip(np.rint(low), -127, 127).astype(np.int8)

    def low_query(self, query: Vector) -> npt.NDArray[np.int8]:
        assert self.basis is not None and self.low_scale is not None
        return _query_codes((query @ self.basis) * self.low_scale)

    def fit_projection(self, project_from: int) -> None:
        """(Re)fit the projection once the matrix is large enough, and again each time it has
        doubled: the top principal directions of the centred rows (the mean adds the same to
        every row's score for one query, so ranking by the centred projection is unchanged)."""
        if self.dim <= 2 * PROJECTED_DIMS or self.n < project_from:
            return
        if self.basis is not None and self.n < 2 * self.fitted_at:
            return
        pick = np.arange(self.n)
        if self.n > FIT_SAMPLE:
            pick = np.sort(np.random.default_rng(self.n).choice(self.n, FIT_SAMPLE, replace=False))
        # the sample is walked FIT_CHUNK rows at a time (a whole float64 copy of 20,000 rows
        # and its centred twin borrowed ~150 MB at once: the process's peak at 100k)
        parts = [pick[lo : lo + FIT_CHUNK] for lo in range(0, len(pick), FIT_CHUNK)]
        total = np.zeros(self.dim, dtype=np.float64)
        for rows in parts:
            total += self._sampled(rows).sum(axis=0, dtype=np.float64)
        mean = total / len(pick)
        cov = np.zeros((self.dim, self.dim), dtype=np.float64)
        for rows in parts:
            centred = self._sampled(rows).astype(np.float64)
            centred -= mean
            cov += centred.T @ centred
        _, vectors = np.linalg.eigh(cov)  # ascending eigenvalues
        basis = np.ascontiguousarray(vectors[:, ::-1][:, :PROJECTED_DIMS], dtype=np.float32)
        spread = np.zeros(PROJECTED_DIMS, dtype=np.float32)
        for rows in parts:
            centred32 = (self._sampled(rows).astype(np.float64) - mean).astype(np.float32)
            spread = np.maximum(spread, np.abs(centred32 @ basis).max(axis=0))
        self.mean = mean.astype(np.float32)
        self.basis = basis
        self.low_scale = np.where(spread > 0, 1.25 * spread / 127.0, 1.0).astype(np.float32)
        self.low = [np.zeros((BLOCK, PROJECTED_DIMS), dtype=np.int8) for _ in self.blocks]
        self.packed = PackedBlocks()
        for b, k in self._block_spans():
            start = b * BLOCK
            for lo in range(0, k, LOAD_CHUNK):
                hi = min(k, lo + LOAD_CHUNK)
                self.low[b][lo:hi] = self._project(self.dequantized(start + lo, start + hi))
        self.fitted_at = self.n

    def _sampled(self, rows: Rows) -> Vector:
        return self.codes_of(rows).astype(np.float32) * self.scale[rows, None]

    # -- on disk -------------------------------------------------------------------------
    def arrays(self, env_ids: Sequence[str]) -> dict[str, npt.NDArray[np.generic]]:
        n = self.n
        out: dict[str, npt.NDArray[np.generic]] = {
            "meta": np.array([FORMAT, self.dim, n, self.rev, self.fitted_at], dtype=np.int64),
            "scale": self.scale[:n],
            "seqs": self.seqs[:n],
            "env": self.env[:n],
            "layer": self.layer[:n],
            "status": self.status[:n],
            "env_ids": np.array(list(env_ids), dtype=np.str_),
            "recent": np.array([(r, q) for r, q, _ in self.recent], dtype=np.int64).reshape(-1, 2),
            "recent_hashes": np.array([h for _, _, h in self.recent], dtype=np.str_),
        }
        if self.mean is not None and self.basis is not None and self.low_scale is not None:
            out |= {"mean": self.mean, "basis": self.basis, "low_scale": self.low_scale}
            out |= {f"low{b}": self.low[b] for b, _ in self._block_spans()}
        out |= {f"codes{b}": self.blocks[b] for b, _ in self._block_spans()}
        return out

    @classmethod
    def from_arrays(cls, data: np.lib.npyio.NpzFile) -> tuple[_Matrix, list[str]]:
        fmt, dim, n, rev, fitted_at = (int(x) for x in data["meta"])
        if fmt != FORMAT:
            raise ValueError(f"vector cache format {fmt}")
        m = cls(dim)
        m.n, m.rev, m.fitted_at = n, rev, fitted_at
        pairs, hashes = data["recent"], data["recent_hashes"]
        m.recent = [(int(r), int(q), str(h)) for (r, q), h in zip(pairs, hashes, strict=True)]
        for name in ("scale", "seqs", "env", "layer", "status"):
            arr = data[name]
            setattr(m, name, np.concatenate([arr, np.zeros(1024, dtype=arr.dtype)]))
        blocks = (n + BLOCK - 1) // BLOCK
        m.blocks = [data[f"codes{b}"] for b in range(blocks)]
        if "basis" in data:
            m.mean, m.basis, m.low_scale = data["mean"], data["basis"], data["low_scale"]
            m.low = [data[f"low{b}"] for b in range(blocks)]
        if any(b.shape != (BLOCK, dim) for b in m.blocks):
            raise ValueError("vector cache blocks of the wrong shape")
        return m, [str(e) for e in data["env_ids"]]


class VectorIndex:
    """Process-local cache of the vectors in one SQLite file (``cache_dir``: where it is kept
    between runs; ``None`` keeps nothing)."""

    def __init__(self, cache_dir: Path | None = None, project_from: int = PROJECT_FROM) -> None:
        self._cache_dir = cache_dir
        self._project_from = project_from
        self._lock = threading.Lock()
        self._models: dict[str, _Matrix] = {}
        self._env_codes: dict[str, int] = {}
        self._epoch = -1
        self._seen: dict[tuple[int, str], int] = {}  # (connection, model) -> data_version
        self._rows_cache: dict[tuple[object, ...], tuple[Rows, npt.NDArray[np.bool_] | None]] = {}
        # the last query's first-stage scores: context assembly asks once per layer with the
        # same vector
        self._memo: tuple[object, vector_pool.Scores] | None = None
        self.rows_read = 0
        """Vector rows read from the database by refreshes (a restart that finds its copy on
        disk reads only the rows written since it was saved)."""

    def _code(self, env_id: str) -> int:
        code = self._env_codes.get(env_id)
        if code is None:
            code = self._env_codes[env_id] = len(self._env_codes) + 1
        return code

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
        # a vector of another size cannot belong to this model; skip it
        keep = [r for r in chunk if r[4] == matrix.dim]
        if keep:
            vectors = np.frombuffer(b"".join(r[5] for r in keep), dtype=np.float32)  # type: ignore[misc]
            matrix.put(
                np.array([r[0] for r in keep], dtype=np.int64),
                np.array([self._code(str(r[1])) for r in keep], dtype=np.int32),
                np.array([_LAYERS[str(r[2])] for r in keep], dtype=np.int8),
                np.array([_STATUSES[str(r[3])] for r in keep], dtype=np.int8),
                vectors.reshape(len(keep), matrix.dim),
            )
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
            n = matrix.n
            q = query.astype(np.float32)
            projected = matrix.basis is not None
            key = (model_id, self._epoch, matrix.rev, n, matrix.fitted_at, q.tobytes())
            if self._memo is not None and self._memo[0] == key:
                scores: vector_pool.Scores = self._memo[1]
            else:
                if projected:
                    scores = matrix.scan(matrix.low_query(q), low=True)
                else:
                    scores = matrix.scan(_query_codes(q), low=False) * matrix.scale[:n]
                self._memo = (key, scores)
            candidates, passing = self._rows(matrix, model_id, env_ids, layers, statuses)
            if candidates.size == 0:
                return []
            if projected:  # stage 1 done: the full codes re-score the pool
                pool = vector_pool.pool_size(limit, n)
                candidates = vector_pool.best_rows(scores, pool, candidates, passing)
                coarse: vector_pool.Scores = _dots(_query_codes(q), matrix.codes_of(candidates))
                coarse = coarse * matrix.scale[candidates]
            else:
                coarse = scores[candidates]
            keep = min(candidates.size, limit + max(limit // 2, 32))
            if keep < candidates.size:
                candidates = candidates[np.argpartition(-coarse, keep - 1)[:keep]]
            seqs = matrix.seqs[candidates]
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

    def _rows(
        self,
        matrix: _Matrix,
        model_id: str,
        env_ids: Sequence[str],
        layers: Sequence[Layer],
        statuses: Sequence[Status],
    ) -> tuple[Rows, npt.NDArray[np.bool_] | None]:
        """Rows passing the filter and their mask (``None``: all pass); cached until the
        matrix changes (the same filters recur across queries and an assembly's layers)."""
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
        self._rows_cache[key] = found = (rows, None if rows.size == n else mask)
        return found

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
