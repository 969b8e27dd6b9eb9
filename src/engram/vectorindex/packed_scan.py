"""The first stage's scan over blocks of 8-bit codes, each full block kept packed.

numkong's packed product is fastest with the *rows* packed and the query as the left operand:
on this machine (Sapphire Rapids, 2 cores) a million rows of 128 codes scan in about 17 ms
packed, against about 30 ms with the query packed and the rows as they are, with the same
integers. Packing a block of 16,384 rows takes about 1.5 ms and 3 % more bytes than the block,
so every full block is packed the first time it is scanned (about 90 ms for a million rows,
once per process or projection), and again after it changed:

- the block still being filled (the last) is scanned as it is: new rows land there;
- a block changed since it was packed (an edited memory's row) is scanned as it is, and at
  most ``REPACK_PER_SCAN`` of those are packed again per scan, so a stream of edits never
  costs a search more than a repack or so.

The packed copies are a cache; the blocks stay the source of every row and of what is saved.
numkong holds the GIL while it computes, so splitting a scan over threads gains nothing
(measured: two threads over halves, the same wall time as one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numkong
import numpy as np
import numpy.typing as npt

REPACK_PER_SCAN = 1
"""Changed full blocks packed again per scan; the others are scanned as they are."""


class PackedBlocks:
    """Packed copies of the full blocks of one list of code blocks."""

    def __init__(self) -> None:
        self._packed: dict[int, numkong.PackedMatrix] = {}
        self._stale: set[int] = set()

    def forget(self, block: int) -> None:
        """Block ``block`` changed: its packed copy no longer holds its rows."""
        self._packed.pop(block, None)
        self._stale.add(block)

    def __len__(self) -> int:
        return len(self._packed)

    def get(
        self, block: int, codes: npt.NDArray[np.int8], repack: bool
    ) -> tuple[numkong.PackedMatrix | None, bool]:
        """``codes`` (block ``block``, full) packed: the copy kept, or packed now if never
        packed (or changed and ``repack``), else ``None`` (changed: scan it as it is); and
        whether it was packed again."""
        packed = self._packed.get(block)
        if packed is not None:
            return packed, False
        changed = block in self._stale
        if changed and not repack:
            return None, False
        packed = self._packed[block] = numkong.dots_pack(codes)
        self._stale.discard(block)
        return packed, changed


def scan(
    query: npt.NDArray[np.int8],
    blocks: Sequence[npt.NDArray[np.int8]],
    spans: Iterable[tuple[int, int]],
    out: npt.NDArray[np.int32],
    packed: PackedBlocks | None = None,
) -> None:
    """The dot of ``query`` (one row of codes) with each used row of ``blocks`` (``spans``:
    block, rows used), into ``out`` (a row's position: its block's start plus its offset);
    ``packed``: the blocks' packed copies, kept and used for the full blocks."""
    repacks = REPACK_PER_SCAN
    loose: numkong.PackedMatrix | None = None
    for b, k in spans:
        codes = blocks[b]
        start = b * codes.shape[0]
        fast = None
        if packed is not None and k == codes.shape[0]:
            fast, repacked = packed.get(b, codes, repack=repacks > 0)
            repacks -= repacked
        if fast is not None:
            product = numkong.dots_packed(query, fast)
        else:  # the rows as they are, the query packed once
            loose = numkong.dots_pack(query) if loose is None else loose
            product = numkong.dots_packed(codes[:k], loose)
        out[start : start + k] = np.asarray(memoryview(product)).reshape(-1)
