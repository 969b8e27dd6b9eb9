"""What every store's in-memory copy of its vectors shares: the models' matrices, the rows a
filter passes, and the two in-memory stages of a search.

A store subclasses :class:`Copies`, keeps each model's :class:`~engram.vectorindex.matrix.Matrix`
current from its database, and re-scores what :meth:`Copies.shortlist` keeps from the float32
vectors it stores (so the scores returned are exact cosines):

1. from ``PROJECT_FROM`` rows, a scan of the rows projected onto their 128 principal
   directions picks a pool of ``vector_pool.pool_size`` candidates; below, the full codes
   score every row;
2. the full 8-bit codes re-score the pool and keep ``limit + max(limit / 2, 32)``.

Filtering by environment, layer and status happens in numpy on the whole matrix; any other
filter is checked by the store on the candidates, widening until enough pass
(:func:`filtered`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

import numpy as np
import numpy.typing as npt

from engram.models import Layer, MemoryFilter, Status
from engram.vectorindex import vector_pool
from engram.vectorindex.matrix import PROJECT_FROM, Matrix, Rows, Vector, dots, query_codes

LAYERS = {layer.value: i for i, layer in enumerate(Layer)}
STATUSES = {status.value: i for i, status in enumerate(Status)}

MEMO_THREADS = 8
"""Threads whose last query's first-stage scores a copy keeps (see :class:`Copies`)."""

Row = tuple[int, str, str, str, int, bytes]
"""One stored vector as a copy takes it: (memory seq, environment, layer, status, dim, float32
bytes)."""


class Copies:
    """The in-memory copies of one database's vectors, one :class:`Matrix` per model."""

    def __init__(self, project_from: int = PROJECT_FROM) -> None:
        self._project_from = project_from
        self._lock = threading.Lock()
        self._models: dict[str, Matrix] = {}
        self._env_codes: dict[str, int] = {}
        self._epoch = -1
        self._rows_cache: dict[tuple[object, ...], tuple[Rows, npt.NDArray[np.bool_] | None]] = {}
        # each thread's last query and its first-stage scores, for the last MEMO_THREADS
        # threads that searched: context assembly asks once per layer with the same vector, one
        # ask after the other on its thread; a memo shared by the threads was the last query
        # of any of them, so under concurrent requests an assembly's later layers scanned the
        # whole matrix again (8 threads: 1.95 scans an assembly). Bounded: a server's
        # threadpool has 40 threads, and at 1M rows one memo is 4 MB
        self._memos: dict[int, tuple[object, vector_pool.Scores]] = {}
        self.rows_read = 0
        """Vector rows read from the database by refreshes."""

    def forget(self) -> None:
        """Drop every model's matrix: the next search loads it again from the database (after a
        store transaction that may have read rows it then rolled back, :meth:`Store.atomic`)."""
        with self._lock:
            self._models.clear()
            self._rows_cache.clear()
            self._memos.clear()
            self._epoch = -1

    @contextmanager
    def forgetting(self, block: AbstractContextManager[None]) -> Iterator[None]:
        """``block`` (a store transaction, :meth:`Store.atomic`), then :meth:`forget`: a search
        inside it may have copied rows it wrote (rolled back, or revisions seen before their
        commit), so the copy is read again from what is committed."""
        try:
            with block:
                yield
        finally:
            self.forget()

    def _code(self, env_id: str) -> int:
        code = self._env_codes.get(env_id)
        if code is None:
            code = self._env_codes[env_id] = len(self._env_codes) + 1
        return code

    def _put(self, matrix: Matrix, rows: Sequence[Row], dtype: npt.DTypeLike = np.float32) -> None:
        """Write stored vectors (their floats of ``dtype``) into ``matrix`` (a vector of another
        size cannot belong to its model: skipped)."""
        keep = [r for r in rows if r[4] == matrix.dim]
        if keep:
            floats = np.frombuffer(b"".join(r[5] for r in keep), dtype=dtype)
            vectors = floats.astype(np.float32, copy=False)
            matrix.put(
                np.array([r[0] for r in keep], dtype=np.int64),
                np.array([self._code(r[1]) for r in keep], dtype=np.int32),
                np.array([LAYERS[r[2]] for r in keep], dtype=np.int8),
                np.array([STATUSES[r[3]] for r in keep], dtype=np.int8),
                vectors.reshape(len(keep), matrix.dim),
            )

    def _shortlist(
        self,
        matrix: Matrix,
        model_id: str,
        q: Vector,
        limit: int,
        env_ids: Sequence[str],
        layers: Sequence[Layer],
        statuses: Sequence[Status],
    ) -> npt.NDArray[np.int64]:
        """The seqs of the rows whose float32 vectors the store re-scores (stages 1 and 2, in
        the caller's lock; ``q`` is float32 of the matrix's dimension)."""
        n = matrix.n
        projected = matrix.basis is not None
        key = (model_id, self._epoch, matrix.rev, n, matrix.fitted_at, q.tobytes())
        thread = threading.get_ident()
        memo = self._memos.pop(thread, None)
        if memo is not None and memo[0] == key:
            scores: vector_pool.Scores = memo[1]
        elif projected:
            scores = matrix.scan(matrix.low_query(q), low=True)
        else:
            scores = matrix.scan(query_codes(q), low=False) * matrix.scale[:n]
        if len(self._memos) >= MEMO_THREADS:  # the thread that searched longest ago
            del self._memos[next(iter(self._memos))]
        self._memos[thread] = (key, scores)
        candidates, passing = self._rows(matrix, model_id, env_ids, layers, statuses)
        if candidates.size == 0:
            return np.zeros(0, dtype=np.int64)
        if projected:  # stage 1 done: the full codes re-score the pool
            pool = vector_pool.pool_size(limit, n)
            candidates = vector_pool.best_rows(scores, pool, candidates, passing)
            coarse: vector_pool.Scores = dots(query_codes(q), matrix.codes_of(candidates))
            coarse = coarse * matrix.scale[candidates]
        else:
            coarse = scores[candidates]
        keep = min(candidates.size, limit + max(limit // 2, 32))
        if keep < candidates.size:
            candidates = candidates[np.argpartition(-coarse, keep - 1)[:keep]]
        seqs: npt.NDArray[np.int64] = matrix.seqs[candidates]
        return seqs

    def _rows(
        self,
        matrix: Matrix,
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
            mask &= _among(matrix.env[:n], codes)
        if layers:
            mask &= _among(matrix.layer[:n], [LAYERS[x.value] for x in layers])
        if statuses:
            mask &= _among(matrix.status[:n], [STATUSES[x.value] for x in statuses])
        rows = np.flatnonzero(mask)
        if len(self._rows_cache) >= 64:
            self._rows_cache.clear()
        self._rows_cache[key] = found = (rows, None if rows.size == n else mask)
        return found


def _among(values: npt.NDArray[np.integer], allowed: list[int]) -> npt.NDArray[np.bool_]:
    """``np.isin(values, allowed)``; one allowed value (the usual filter) compared directly, a
    tenth of ``isin``'s cost over 10k rows."""
    found: npt.NDArray[np.bool_] = (
        values == allowed[0] if len(allowed) == 1 else np.isin(values, allowed)
    )
    return found


def needs_sql(flt: MemoryFilter) -> bool:
    """Whether ``flt`` asks for more than the copy filters (environment, layer, status)."""
    return bool(
        flt.categories
        or flt.tags
        or flt.ids
        or flt.threads
        or flt.created_after
        or flt.created_before
        or flt.updated_after
        or flt.updated_before
        or flt.min_importance is not None
        or flt.max_importance is not None
    )


def rest_of(flt: MemoryFilter, ids: list[str]) -> MemoryFilter | None:
    """What a store checks in SQL of ``flt`` on the copy's candidates ``ids`` (environment,
    layer and status already passed), or ``None`` when none of them can pass (its own ids)."""
    if flt.ids:  # the candidates the filter's own ids allow ("ids": [] means any)
        allowed = set(flt.ids)
        ids = [i for i in ids if i in allowed]
        if not ids:
            return None
    return flt.model_copy(update={"environment_ids": [], "layers": [], "statuses": [], "ids": ids})


def filtered(
    search: Callable[[int], list[tuple[str, float]]],
    passing: Callable[[list[str]], set[str]],
    flt: MemoryFilter,
    limit: int,
) -> list[tuple[str, float]]:
    """The best ``limit`` of ``search(want)`` (the copy's top ``want``, filtered by environment,
    layer and status) whose ids ``passing`` keeps (the rest of ``flt``, checked by the store),
    asking for four times as many until enough pass or the copy has no more."""
    if not needs_sql(flt):
        return search(limit)
    want = limit * 4
    while True:
        candidates = search(want)
        kept = passing([c[0] for c in candidates])
        hits = [c for c in candidates if c[0] in kept]
        if len(hits) >= limit or len(candidates) < want:
            return hits[:limit]
        want *= 4
