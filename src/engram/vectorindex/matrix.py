"""The compact in-memory copy of one embedding model's vectors, whatever store they come from.

A vector is 8-bit codes and one float scale per row (``dim + 4`` bytes, not ``4 × dim``), in
blocks of ``BLOCK`` rows (growing never copies the matrix), known by its memory's ``seq``, with
its environment, layer and status beside it so that a search filters in numpy. From
``PROJECT_FROM`` rows a first stage scans the rows projected onto their 128 principal directions
(:meth:`Matrix.fit_projection`). The stores keep it current in their own way (SQLite:
``store/sqlite/vectors.py``; PostgreSQL: ``store/postgres/vector_copy.py``); the search stages
over it are in :mod:`engram.vectorindex.copies`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numkong
import numpy as np
import numpy.typing as npt

from engram.vectorindex import packed_scan
from engram.vectorindex.packed_scan import PackedBlocks

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
"""Rows read from a store at a time when (re)loading: bounds the memory a full load borrows."""
FORMAT = 1


def quantize(vectors: Vector) -> tuple[npt.NDArray[np.int8], Vector]:
    """8-bit codes and per-row scales: ``vectors ≈ codes × scale``."""
    peak = np.abs(vectors).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.rint(vectors / scale[:, None]).astype(np.int8)
    return codes, scale


def query_codes(vector: Vector) -> npt.NDArray[np.int8]:
    peak = float(np.abs(vector).max())
    if peak == 0.0:
        return np.zeros((1, vector.shape[0]), dtype=np.int8)
    codes: npt.NDArray[np.int8] = np.rint(vector * (127.0 / peak)).astype(np.int8)
    return codes.reshape(1, -1)


def dots(query: npt.NDArray[np.int8], codes: npt.NDArray[np.int8]) -> npt.NDArray[np.float64]:
    """Integer dot products of one 8-bit query with each row of ``codes`` (SIMD)."""
    if codes.shape[0] == 0:
        return np.zeros(0)
    return np.asarray(numkong.cdist(query, codes, metric="dot")).reshape(-1)


def _lookup(
    ranked: npt.NDArray[np.int64], order: Rows, wanted: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.bool_], Rows]:
    """Which ``wanted`` seqs are in ``ranked`` (sorted seqs, non-empty), and the row
    (``order[position]``) of each found."""
    pos = np.minimum(np.searchsorted(ranked, wanted), ranked.size - 1)
    found = ranked[pos] == wanted
    return found, order[pos[found]]


class Matrix:
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
            found, at = _lookup(self._sorted, self._order, seqs)
            rows[found] = at
        tail = self.seqs[self._sorted_n : self.n]
        missing = np.flatnonzero(rows < 0)
        if tail.size and missing.size:  # the unsorted tail (up to 4,096 rows), sorted here
            order = np.argsort(tail, kind="stable")
            found, at = _lookup(tail[order], order, seqs[missing])
            rows[missing[found]] = self._sorted_n + at
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
            # rows whose vector is the one they hold (a status alone changed: a superseded
            # fact) keep their projected codes, and the block its packed copy
            changed = low is not None and (
                bool(new[inside].any())
                or not np.array_equal(self.blocks[b][offsets], codes[inside])
            )
            self.blocks[b][offsets] = codes[inside]
            if low is not None and changed:
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
        return query_codes((query @ self.basis) * self.low_scale)

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
    def from_arrays(cls, data: np.lib.npyio.NpzFile) -> tuple[Matrix, list[str]]:
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
