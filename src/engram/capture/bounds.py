"""Bounding captured text: long bodies keep their head and their tail, where the question and
the outcome usually are."""

from __future__ import annotations

from engram.scrub.core import MARKER_START

PROMPT_BYTES = 16 * 1024
"""Prompts, assistant messages and compaction summaries."""
EXCERPT_BYTES = 2 * 1024
"""Tool inputs and results."""
START_TOKENS = (100, 8000)
"""The range of a session-start block's token budget (``ENGRAM_CONTEXT_TOKENS``), as the
session-start route takes it (``tests/test_capture_units.py`` pins the two together)."""


def bound(text: str, limit: int) -> str:
    """``text`` if it fits ``limit`` UTF-8 bytes, else its head and tail around a marker saying
    how much was cut (the result fits ``limit``)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    # the marker names at most len(data) bytes: its real length is no more than this
    marker_len = len(f"\n…[{len(data)} bytes cut]…\n".encode())
    keep = max(limit - marker_len, 0)
    head_n = keep * 2 // 3
    tail_n = keep - head_n
    head = data[:head_n].decode("utf-8", "ignore")
    tail = data[len(data) - tail_n :].decode("utf-8", "ignore") if tail_n else ""
    cut = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n…[{cut} bytes cut]…\n{tail}"


def cut(text: str, limit: int, suffix: str = "") -> str:
    """``text`` cut to at most ``limit`` characters, ``suffix`` (such as ``…``) included when
    it is cut, and never inside a ``[REDACTED:…]`` marker: a marker the cut would split is left
    out whole."""
    if len(text) <= limit:
        return text
    end = max(limit - len(suffix), 0)
    # the last marker that starts before the cut (its own start may already be cut)
    start = text.rfind(MARKER_START, 0, end + len(MARKER_START) - 1)
    if start != -1 and start < end and text.find("]", start) >= end:  # it runs past the cut
        end = start
    return text[:end].rstrip() + suffix
