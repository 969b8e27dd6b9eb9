"""A bounded memo of a function of a text that keeps no copy of the text.

``functools.lru_cache`` keeps each argument as its key, plus a linked-list node per entry: for
the retrieval path's memos (the stems of memory texts, the tokens of rendered context lines)
the keys were most of the memory. Here the key is the text's 64-bit hash (a different text
with the same hash would get its value: about one chance in 2**64 per pair), and when the memo
is full the oldest quarter of its entries goes (insertion order), which keeps the hit rate of
a least-recently-used cache on recurring texts.

Lookups take no lock; inserts and evictions share one, so concurrent callers never see a
half-evicted memo.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import islice
from typing import Generic, TypeVar

V = TypeVar("V")

_MISSING = object()


class HashedMemo(Generic[V]):
    """``fn`` memoised for up to ``maxsize`` texts, keyed by each text's hash."""

    def __init__(self, fn: Callable[[str], V], maxsize: int) -> None:
        if maxsize < 4:
            raise ValueError("maxsize must be at least 4")
        self._fn = fn
        self.maxsize = maxsize
        self._memo: dict[int, V] = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __call__(self, text: str) -> V:
        key = hash(text)
        found = self._memo.get(key, _MISSING)
        if found is not _MISSING:
            self.hits += 1
            return found  # type: ignore[return-value]
        self.misses += 1
        value = self._fn(text)
        with self._lock:
            if len(self._memo) >= self.maxsize:
                for old in list(islice(self._memo, self.maxsize // 4)):
                    del self._memo[old]
            self._memo[key] = value
        return value

    def __len__(self) -> int:
        return len(self._memo)

    def clear(self) -> None:
        with self._lock:
            self._memo.clear()
