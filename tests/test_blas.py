"""engram.blas: a server's numpy runs its BLAS on one thread, unless OpenBLAS's environment
named a count (checked in fresh processes: OpenBLAS reads its environment when it loads)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engram.blas import _libraries

PROBE = """
import ctypes
from engram.blas import _libraries, limit_blas_threads
library = ctypes.CDLL(str(_libraries()[0]))
took = limit_blas_threads(1)
print(took, library.scipy_openblas_get_num_threads64_())
"""


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.endswith("NUM_THREADS")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(
    not _libraries() or (os.cpu_count() or 1) < 2, reason="numpy's bundled OpenBLAS, 2+ cores"
)
def test_one_thread_unless_the_environment_names_a_count() -> None:
    assert _probe() == "True 1"
    assert _probe(OPENBLAS_NUM_THREADS="2") == "False 2"
    assert _probe(OMP_NUM_THREADS="2") == "False 2"
