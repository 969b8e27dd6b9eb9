"""What the process keeps after a bulk pass: engram.heap gives glibc's free pages back, and the
vector index fits its projection without borrowing a float64 copy of its whole sample."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np

from engram.store.sqlite.vectors import FIT_SAMPLE, PROJECTED_DIMS, _Matrix


def test_give_back_returns_the_free_pages_of_a_fragmented_heap() -> None:
    # a fresh process: many small objects (below the mmap threshold: they live in the heap),
    # every 64th kept so that the heap cannot simply shrink from its top
    script = textwrap.dedent(
        """
        from engram import heap

        def anon_mib():
            for line in open("/proc/self/smaps_rollup"):
                if line.startswith("Anonymous:"):
                    return int(line.split()[1]) / 1024

        blocks = [bytes(2000) + i.to_bytes(8, "little") for i in range(100_000)]
        kept = blocks[::64]
        del blocks
        before = anon_mib()
        assert heap.give_back()
        print(before, anon_mib(), len(kept))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    before, after, _ = (float(x) for x in out.split())
    assert before - after > 100, (before, after)  # ~190 MB freed, nearly all given back


def _matrix(n: int, dim: int = 384) -> _Matrix:
    rng = np.random.default_rng(7)
    m = _Matrix(dim)
    for start in range(0, n, 5000):
        x = rng.standard_normal((5000, dim)).astype(np.float32) + 0.5
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        seqs = np.arange(start, start + 5000, dtype=np.int64)
        zeros8 = np.zeros(5000, dtype=np.int8)
        m.put(seqs, np.zeros(5000, dtype=np.int32), zeros8, zeros8, x)
    return m


def test_the_projection_is_the_whole_sample_fit_in_a_fraction_of_its_memory() -> None:
    m = _matrix(2 * FIT_SAMPLE)
    # the fit as one pass over the whole sample (what it was), computed here
    pick = np.sort(np.random.default_rng(m.n).choice(m.n, FIT_SAMPLE, replace=False))
    sample = m.codes_of(pick).astype(np.float32) * m.scale[pick, None]
    centred = sample.astype(np.float64) - sample.mean(axis=0, dtype=np.float64)
    _, vectors = np.linalg.eigh(centred.T @ centred)
    whole = np.ascontiguousarray(vectors[:, ::-1][:, :PROJECTED_DIMS], dtype=np.float32)
    spread = np.abs(centred.astype(np.float32) @ whole).max(axis=0)
    sample_mib = centred.nbytes / 2**20  # 59 MiB: the float64 copy the whole-sample fit needs
    del sample, centred, vectors

    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        m.fit_projection(FIT_SAMPLE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.basis is not None and m.low_scale is not None
    # the same directions (up to sign) and scales
    assert np.allclose(np.abs(m.basis), np.abs(whole), atol=1e-5)
    assert np.allclose(m.low_scale, 1.25 * spread / 127.0, rtol=1e-5)
    # (the whole-sample fit peaked at ~2.5 times the sample's float64 size; the projection of
    # every row, stored and computed a chunk at a time, is most of what remains)
    assert peak / 2**20 < 0.75 * sample_mib, peak / 2**20
