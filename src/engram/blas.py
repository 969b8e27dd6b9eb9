"""How many threads numpy's BLAS (OpenBLAS) runs a matrix product on.

A server runs many requests at once on few cores: a BLAS that splits each request's small
products over every core only adds threads that wait for each other and for the cores the
other requests hold (on this 2-core machine, OpenBLAS's default cost a context assembly ~40 %
more CPU). ``engram serve`` therefore asks for one thread per product, unless OpenBLAS was
given a count by its environment (``OPENBLAS_NUM_THREADS``, ``GOTO_NUM_THREADS`` or
``OMP_NUM_THREADS``, as OpenBLAS itself read them when it loaded).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

_SETTERS = (
    "scipy_openblas_set_num_threads64_",  # numpy's own wheels (scipy-openblas, 64-bit ints)
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_FROM_ENVIRONMENT = (
    "openblas_num_threads_env",
    "openblas_goto_num_threads_env",
    "openblas_omp_num_threads_env",
)


def _libraries() -> list[Path]:
    import numpy

    root = Path(numpy.__file__).resolve().parent
    return sorted((root.parent / "numpy.libs").glob("*openblas*.so*"))


def limit_blas_threads(threads: int = 1) -> bool:
    """Have numpy's OpenBLAS use ``threads`` threads from now on, unless its environment gave
    it a count; returns whether a BLAS took the setting."""
    for path in _libraries():
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        told = (getattr(library, name, None) for name in _FROM_ENVIRONMENT)
        if any(read is not None and int(read()) > 0 for read in told):
            return False
        for name in _SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(ctypes.c_int(threads))
                return True
    return False
