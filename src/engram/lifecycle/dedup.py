"""Dedup: how alike two facts are, and whether they are the same fact.

Two measures, either of which can declare a duplicate: the Jaccard index of the two texts'
content-word sets (works with no embedder at all) and the cosine of their embeddings.
"""

from __future__ import annotations

import re
from typing import Generic, NamedTuple, Protocol, TypeVar

from engram.lifecycle.config import LifecycleConfig
from engram.scrub.core import MARKER_START
from engram.text import content_word_frozenset, distinct_content_words

_MARKER = re.compile(re.escape(MARKER_START) + r"[a-z0-9_]*\]")
"""A secret's marker: two facts that each held a secret of one kind are not alike for it
('My password is [REDACTED:…]', 'the wifi password is [REDACTED:…]')."""


def _unmarked(text: str) -> str:
    return _MARKER.sub(" ", text) if MARKER_START in text else text


class Fact(Protocol):
    """What the write-time rules read about an existing fact: a
    :class:`~engram.models.Memory`, or the lighter
    :class:`~engram.store.protocol.MemoryText` the candidate index holds."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def pinned(self) -> bool: ...


F = TypeVar("F", bound=Fact, covariant=True)


def word_set(text: str) -> frozenset[str]:
    """The content words of ``text`` (lowercased, stopwords removed, possessive 's dropped so
    "Alice's editor" and "the editor of Alice" share 'alice'), as a set."""
    found = distinct_content_words(_unmarked(text))
    if ("'" in text or "’" in text) and any("'" in w for w in found):
        return frozenset(w.removesuffix("'s") for w in found)
    return frozenset(found)


def fact_words(text: str) -> frozenset[str]:
    """The same set as :func:`word_set`, in fewer steps, though not always in the same
    iteration order: for facts entered into an index, where only the set matters (a new
    text's lookup terms keep :func:`word_set`'s order, which decides how equal-scoring
    candidates are ranked)."""
    found = content_word_frozenset(_unmarked(text))
    if "'" in text or "’" in text:
        return frozenset(w.removesuffix("'s") for w in found)
    return found


def jaccard(a: frozenset[str], b: frozenset[str] | tuple[str, ...]) -> float:
    """``b``: a set, or a tuple of distinct words (as the candidate index keeps them)."""
    if not a and not b:
        return 1.0
    shared = len(a.intersection(b))
    return shared / (len(a) + len(b) - shared)


class Candidate(NamedTuple, Generic[F]):
    """An existing active fact compared with a new text (a named tuple: a write builds about
    40 of them, a third of the cost of a frozen dataclass each)."""

    memory: F
    jaccard: float
    cosine: float | None = None
    """None when either side has no vector (keyword-only mode)."""

    def is_duplicate(self, cfg: LifecycleConfig) -> bool:
        return self.jaccard >= cfg.dedup_jaccard or (
            self.cosine is not None and self.cosine >= cfg.dedup_cosine
        )

    def in_band(self, cfg: LifecycleConfig) -> bool:
        """Similar enough to be checked for a contradiction (duplicates included). With a
        cosine the band is the embedding's; without one, ``contradiction_jaccard`` stands in."""
        if self.is_duplicate(cfg):
            return True
        if self.cosine is not None:
            return self.cosine >= cfg.contradiction_cosine
        return self.jaccard >= cfg.contradiction_jaccard

    @property
    def similarity(self) -> float:
        """The stronger of the two measures, used to rank candidates."""
        return max(self.jaccard, self.cosine if self.cosine is not None else 0.0)

    def describe(self) -> str:
        cos = "" if self.cosine is None else f", cosine {self.cosine:.2f}"
        return f"jaccard {self.jaccard:.2f}{cos}"


def merged_confidence(current: float, incoming: float, cfg: LifecycleConfig) -> float:
    """Confidence after a fact is said again: a step of ``confidence_boost`` towards 1, never
    below what either statement carried."""
    raised = current + (1.0 - current) * cfg.confidence_boost
    return round(min(1.0, max(raised, incoming)), 4)
