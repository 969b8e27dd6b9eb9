"""The first stage's packed scan (vectorindex/packed_scan.py): the full blocks' packed copies
give the very integers of the plain product, follow every change of a block's rows, and a
stream of changed blocks is packed again at most ``REPACK_PER_SCAN`` a scan."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engram.models import Layer, Status
from engram.vectorindex import packed_scan
from engram.vectorindex.matrix import BLOCK
from engram.vectorindex.matrix import Matrix as _Matrix

DIMS = 128


def blocks(rng: np.random.Generator, count: int) -> list[npt.NDArray[np.int8]]:
    return [rng.integers(-127, 128, size=(BLOCK, DIMS), dtype=np.int8) for _ in range(count)]


def plain(query: npt.NDArray[np.int8], codes: list[npt.NDArray[np.int8]], n: int) -> np.ndarray:
    rows = np.concatenate(codes)[:n].astype(np.int64)
    return rows @ query[0].astype(np.int64)


def test_packed_blocks_give_the_plain_products_and_the_last_block_is_not_packed() -> None:
    rng = np.random.default_rng(3)
    codes, n = blocks(rng, 3), 2 * BLOCK + 1000  # the third block partly filled
    spans = [(0, BLOCK), (1, BLOCK), (2, 1000)]
    query = rng.integers(-127, 128, size=(1, DIMS), dtype=np.int8)
    packed, out = packed_scan.PackedBlocks(), np.empty(n, dtype=np.int32)
    packed_scan.scan(query, codes, spans, out, packed)
    assert (out == plain(query, codes, n)).all()
    assert len(packed) == 2  # the full blocks
    loose = np.empty(n, dtype=np.int32)
    packed_scan.scan(query, codes, spans, loose)
    assert (loose == out).all()


def test_a_changed_block_is_scanned_as_it_is_until_packed_again() -> None:
    rng = np.random.default_rng(4)
    codes, n = blocks(rng, 3), 3 * BLOCK
    spans = [(0, BLOCK), (1, BLOCK), (2, BLOCK)]
    query = rng.integers(-127, 128, size=(1, DIMS), dtype=np.int8)
    packed, out = packed_scan.PackedBlocks(), np.empty(n, dtype=np.int32)
    packed_scan.scan(query, codes, spans, out, packed)
    for b in (0, 2):  # two blocks' rows change after they were packed
        codes[b][:50] = rng.integers(-127, 128, size=(50, DIMS), dtype=np.int8)
        packed.forget(b)
    assert len(packed) == 1
    for repacked in (2, 3, 3):  # one changed block packed again per scan
        packed_scan.scan(query, codes, spans, out, packed)
        assert (out == plain(query, codes, n)).all()
        assert len(packed) == repacked


def test_a_matrix_s_written_rows_reach_its_packed_scan() -> None:
    rng = np.random.default_rng(5)
    dim, n = 384, 2 * BLOCK + 500
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = _Matrix(dim)

    def put(seqs: np.ndarray, rows: np.ndarray) -> None:
        k = len(seqs)
        layer = np.full(k, list(Layer).index(Layer.FACT), dtype=np.int8)
        status = np.full(k, list(Status).index(Status.ACTIVE), dtype=np.int8)
        matrix.put(seqs, np.ones(k, dtype=np.int32), layer, status, rows)

    put(np.arange(1, n + 1, dtype=np.int64), vectors)
    matrix.fit_projection(1000)
    query = matrix.low_query(vectors[7])

    def unpacked() -> np.ndarray:
        out = np.empty(matrix.n, dtype=np.int32)
        packed_scan.scan(query, matrix.low, list(matrix._block_spans()), out)
        return out

    assert (matrix.scan(query, low=True) == unpacked()).all()
    assert len(matrix.packed) == 2
    # rows of the first block rewritten (an edited memory, a new vector): not the old codes
    changed = rng.standard_normal((20, dim)).astype(np.float32)
    put(np.arange(1, 21, dtype=np.int64), changed / np.linalg.norm(changed, axis=1)[:, None])
    before = unpacked()
    assert (matrix.scan(query, low=True) == before).all()
    assert (matrix.scan(query, low=True) == before).all()


def test_a_row_whose_status_alone_changed_keeps_its_block_packed() -> None:
    """A superseded fact's row is written again with its new status and the same vector: the
    block's packed codes still hold, so it is not packed again (before, every supersede or
    merge made the next scans read its block unpacked or pack it again, ~1.5 ms a block)."""
    rng = np.random.default_rng(6)
    dim, n = 384, 2 * BLOCK + 10
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = _Matrix(dim)
    fact = np.full(1, list(Layer).index(Layer.FACT), dtype=np.int8)

    def put(seq: int, vector: np.ndarray, status: Status) -> None:
        rows = vector.reshape(1, dim)
        state = np.full(1, list(Status).index(status), dtype=np.int8)
        matrix.put(np.array([seq], dtype=np.int64), np.ones(1, dtype=np.int32), fact, state, rows)

    layer = np.full(n, list(Layer).index(Layer.FACT), dtype=np.int8)
    active = np.full(n, list(Status).index(Status.ACTIVE), dtype=np.int8)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    matrix.put(seqs, np.ones(n, dtype=np.int32), layer, active, vectors)
    matrix.fit_projection(1000)
    matrix.scan(matrix.low_query(vectors[0]), low=True)
    assert len(matrix.packed) == 2
    put(5, vectors[4], Status.SUPERSEDED)  # seq 5: row 4, first block
    assert len(matrix.packed) == 2 and matrix.status[4] == list(Status).index(Status.SUPERSEDED)
    put(6, vectors[0], Status.ACTIVE)  # a new vector for seq 6: the block changed
    assert len(matrix.packed) == 1


def test_a_matrix_finds_each_seq_s_row_in_its_sorted_part_and_its_unsorted_tail() -> None:
    """Rows are appended in batches of shuffled seqs (some written again); ``locate`` gives
    each seq its row, or -1, whether the row is in the sorted part or the tail after it."""
    rng = np.random.default_rng(5)
    matrix, row_of = _Matrix(DIMS), {}
    seqs = rng.permutation(20_000).astype(np.int64) + 1
    for start in range(0, 12_000, 1_500):
        batch = seqs[start : start + 1_500]
        again = rng.choice(seqs[: start + 1], size=min(start + 1, 40), replace=False)
        batch = np.unique(np.concatenate([batch, again[np.isin(again, list(row_of))]]))
        n = len(batch)
        matrix.put(
            batch,
            np.ones(n, dtype=np.int32),
            np.full(n, 0, dtype=np.int8),
            np.full(n, 0, dtype=np.int8),
            rng.standard_normal((n, DIMS)).astype(np.float32),
        )
        for s in batch:
            row_of.setdefault(int(s), len(row_of))
        probe = np.concatenate([rng.choice(seqs[: start + 1_500], 500), np.array([0, 99_999])])
        want = np.array([row_of.get(int(s), -1) for s in probe])
        assert (matrix.locate(probe) == want).all()
    assert matrix.n == len(row_of) == 12_000
