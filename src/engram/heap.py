"""Freed memory given back to the operating system after a bulk pass.

glibc's allocator keeps what a thread freed in that thread's arena for reuse: after a pass
that borrowed a lot at once (embedding every pending memory, loading every vector) the
process's RSS stays at its high-water mark although the memory is free. :func:`give_back`
asks the allocator to return the free pages (``malloc_trim``); elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable
from functools import cache

BULK_ROWS = 10_000
"""Rows a pass handles at least before it gives back what it freed (a trim walks the whole
heap: a few milliseconds at a few hundred MB, not worth it after a small pass)."""


@cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


def give_back() -> bool:
    """Return the allocator's free pages to the OS; whether it could (glibc only)."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
