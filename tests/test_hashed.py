"""HashedMemo: bounded, oldest entries go first, values as the function gives them."""

from __future__ import annotations

import sys
import threading

import pytest

from engram.hashed import HashedMemo


def test_memoises_and_evicts_the_oldest_quarter() -> None:
    calls: list[str] = []

    def length(text: str) -> int:
        calls.append(text)
        return len(text)

    memo = HashedMemo(length, maxsize=8)
    for i in range(8):
        assert memo(f"text {i}") == len(f"text {i}")
    assert memo("text 7") == 6 and len(calls) == 8  # a hit: not computed again
    memo("text 8")  # full: the two oldest go
    assert len(memo) == 7
    memo("text 2")
    memo("text 0")
    assert calls[-1] == "text 0" and calls.count("text 2") == 1
    with pytest.raises(ValueError, match="maxsize"):
        HashedMemo(length, maxsize=2)


def test_keeps_no_text() -> None:
    memo = HashedMemo(len, maxsize=100)
    text = "".join(["a long rendered line ", "of a memory"])
    refs = sys.getrefcount(text)
    memo(text)
    assert sys.getrefcount(text) == refs


def test_concurrent_callers_agree() -> None:
    memo = HashedMemo(lambda t: t.upper(), maxsize=64)
    errors: list[str] = []

    def run(seed: int) -> None:
        for i in range(2000):
            text = f"t{(i * seed) % 300}"
            if memo(text) != text.upper():
                errors.append(text)

    threads = [threading.Thread(target=run, args=(s,)) for s in (1, 7, 13, 31)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(memo) <= 64
