"""Thresholds and half-lives of the lifecycle, in one frozen value built at an entry point."""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.errors import InvalidInput
from engram.models import Layer


def _half_lives() -> dict[Layer, float]:
    return {Layer.FACT: 180.0, Layer.EPISODE: 30.0, Layer.PROCEDURE: 365.0}


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Every number the lifecycle rules use. The defaults follow issue 7."""

    # -- dedup on write: either test merges the new fact into an existing one
    dedup_jaccard: float = 0.60
    """Word-set Jaccard (content words) at or above which two facts are the same."""
    dedup_cosine: float = 0.92
    """Embedding cosine at or above which two facts are the same."""

    # -- contradiction: pairs in [band_cosine, dedup_cosine) are checked by rules
    contradiction_cosine: float = 0.75
    """Lower edge of the similarity band in which a pair is checked for a conflict."""
    contradiction_jaccard: float = 0.30
    """Lexical stand-in for the band when a pair has no cosine (keyword-only mode)."""

    protect_importance: float = 0.8
    """A memory this important (or pinned) is superseded only by a strong match: the same
    subject and a named attribute, every claim replaced. A weaker one goes to review."""

    keyword_candidates: int = 40
    vector_candidates: int = 10
    confidence_boost: float = 0.2
    """A merge moves confidence this fraction of the way to 1."""

    # -- decay
    half_life_days: dict[Layer, float] = field(default_factory=_half_lives)
    access_weight: float = 0.6
    """Weight of ln(1 + accesses) in the retention score (accesses include reinforcements)."""
    flag_importance: float = 0.1
    """Memories below this importance ..."""
    flag_idle_days: float = 120.0
    """... and untouched (no write, no read) for this long ..."""
    flag_max_uses: int = 3
    """... and read or reinforced fewer times than this are flagged for removal: a memory
    that was used is not noise, however old."""

    # -- compaction of cold episodes into facts
    cold_retention: float = 0.2
    """An episode whose retention falls below this is cold."""
    cold_min_idle_days: float = 30.0
    """An episode is never cold before it has been untouched this long."""
    compaction_max_facts: int = 5
    compaction_min_words: int = 4
    """A sentence with fewer content words is too thin to become a fact."""

    def half_life(self, layer: Layer) -> float:
        return self.half_life_days.get(layer, 180.0)

    def __post_init__(self) -> None:
        for name in (
            "dedup_jaccard",
            "dedup_cosine",
            "contradiction_cosine",
            "contradiction_jaccard",
            "protect_importance",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidInput(f"{name} must be in [0, 1], got {value}")
        if self.contradiction_cosine > self.dedup_cosine:
            raise InvalidInput("contradiction_cosine must not exceed dedup_cosine")
        if any(h <= 0 for h in self.half_life_days.values()):
            raise InvalidInput("half-lives must be positive")
