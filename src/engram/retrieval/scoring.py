"""The five-factor score: relevance, importance, confidence, recency, frequency.

Each factor is a value in [0, 1]; the score is their weighted sum with the weights of the
memory's layer normalised to 1, so the breakdown always adds up to the score.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from operator import mul
from typing import Protocol

from engram.models import Layer
from engram.retrieval.models import Factor, ScoreBreakdown, Stream
from engram.trusted import construct


class Rankable(Protocol):
    """What scoring reads of a memory (a Memory or the store's RankFields)."""

    @property
    def layer(self) -> Layer: ...
    @property
    def importance(self) -> float: ...
    @property
    def confidence(self) -> float: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def access_count(self) -> int: ...


@dataclass(frozen=True)
class FactorWeights:
    relevance: float = 0.6
    importance: float = 0.15
    confidence: float = 0.1
    recency: float = 0.1
    frequency: float = 0.05

    def normalised(self, with_relevance: bool = True) -> FactorWeights:
        rel = self.relevance if with_relevance else 0.0
        total = rel + self.importance + self.confidence + self.recency + self.frequency
        if total <= 0:
            raise ValueError("factor weights must not all be zero")
        return FactorWeights(
            rel / total,
            self.importance / total,
            self.confidence / total,
            self.recency / total,
            self.frequency / total,
        )


@dataclass(frozen=True)
class LayerScoring:
    weights: FactorWeights = field(default_factory=FactorWeights)
    half_life_days: float = 90.0
    min_similarity: float = 0.55
    """Context assembly keeps a memory only if its cosine similarity to the query reaches this
    (for embedders without a calibrated floor, see ``SIMILARITY_FLOORS``), or its keyword match
    is strong (see ``ScoringConfig.min_keyword_norm``)."""


SIMILARITY_RANGES: dict[str, tuple[float, float]] = {
    # (unrelated, near-paraphrase) cosines of a model: relevance maps the first to 0 and the
    # second to 1. Static models have compressed cosines: unrelated short sentences ≈ 0.6-0.65,
    # related ≥ 0.75, paraphrases ≈ 0.9
    "minilm-static-v1": (0.6, 0.9),
}
DEFAULT_SIMILARITY_RANGE = (0.15, 0.8)
"""For transformer embedders (MiniLM, OpenAI): unrelated ≈ 0.0-0.2, paraphrases ≥ 0.8."""

SIMILARITY_FLOORS: dict[str, dict[Layer, float]] = {
    # static models have compressed cosines (unrelated short sentences ≈ 0.6-0.65, related
    # ≥ 0.75): their floors are calibrated by model rather than taken from the layer default
    "minilm-static-v1": {Layer.FACT: 0.72, Layer.EPISODE: 0.72, Layer.PROCEDURE: 0.68},
}


@dataclass(frozen=True)
class ScoringConfig:
    """Per-layer weights, half-lives and thresholds, plus how the two streams are fused."""

    fact: LayerScoring = field(default_factory=LayerScoring)
    episode: LayerScoring = field(default_factory=lambda: LayerScoring(half_life_days=30.0))
    procedure: LayerScoring = field(
        default_factory=lambda: LayerScoring(half_life_days=120.0, min_similarity=0.45)
    )
    keyword_weight: float = 0.4
    semantic_weight: float = 0.6
    author_weight: float = 0.1
    """Share of relevance given to the query naming the memory's author (retrieval.provenance)."""
    thread_weight: float = 0.3
    """Share of relevance given to the strength of the memory's thread (retrieval.provenance)."""
    thread_top: int = 2
    time_weight: float = 0.15
    """Share of relevance given to the memory being recorded within a time the query names
    (retrieval.when); nothing changes for a query that names no time."""
    min_keyword_norm: float = 0.5
    min_relevance: float = 0.1
    """The floor: search returns nothing whose stream relevance (keyword and semantic, before
    the author and thread signals) is below this."""
    context_relevance: float = 0.25
    """Context assembly also packs a memory below its layer's similarity floor when its
    stream relevance reaches this."""
    frequency_saturation: int = 20

    def __post_init__(self) -> None:
        if min(self.author_weight, self.thread_weight, self.time_weight) < 0:
            raise ValueError("author_weight, thread_weight and time_weight must not be negative")
        if self.author_weight + self.thread_weight + self.time_weight >= 1:
            raise ValueError("author_weight + thread_weight + time_weight must stay below 1")
        if self.thread_top < 1:
            raise ValueError("thread_top must be at least 1")

    def layer(self, layer: Layer) -> LayerScoring:
        if layer is Layer.FACT:  # asked once per candidate: no mapping built each time
            return self.fact
        return self.episode if layer is Layer.EPISODE else self.procedure

    def similarity_range(self, model_id: str | None) -> tuple[float, float]:
        return SIMILARITY_RANGES.get(model_id or "", DEFAULT_SIMILARITY_RANGE)

    def similarity_floor(self, layer: Layer, model_id: str | None) -> float:
        """The cosine a memory of ``layer`` needs to enter an assembled context."""
        calibrated = SIMILARITY_FLOORS.get(model_id or "", {})
        return calibrated.get(layer, self.layer(layer).min_similarity)


def recency(memory: Rankable, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - memory.updated_at).total_seconds() / 86400)
    return float(0.5 ** (age_days / half_life_days))


def frequency(memory: Rankable, saturation: int) -> float:
    return min(1.0, math.log1p(memory.access_count) / math.log1p(saturation))


FACTORS = ("relevance", "importance", "confidence", "recency", "frequency")


@lru_cache(maxsize=64)
def _normalised(weights: FactorWeights, with_relevance: bool) -> FactorWeights:
    return weights.normalised(with_relevance)


def factor_values(
    memory: Rankable, relevance: float | None, now: datetime, config: ScoringConfig
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The five factor values and their normalised weights, in ``FACTORS`` order.
    ``relevance`` None means there was no query: the other four factors rank alone."""
    weights, half_life = layer_terms(config, memory.layer, relevance is not None)
    return factor_tuple(memory, relevance, now, half_life, config.frequency_saturation), weights


def layer_terms(
    config: ScoringConfig, layer: Layer, with_relevance: bool
) -> tuple[tuple[float, ...], float]:
    """A layer's normalised weights (in ``FACTORS`` order) and its recency half-life: the
    same for every candidate of the layer (looked up once per ranking)."""
    scoring = config.layer(layer)
    w = _normalised(scoring.weights, with_relevance)
    return (w.relevance, w.importance, w.confidence, w.recency, w.frequency), scoring.half_life_days


def factor_tuple(
    memory: Rankable, relevance: float | None, now: datetime, half_life: float, saturation: int
) -> tuple[float, ...]:
    """The five factor values of :func:`factor_values`, the layer's terms given."""
    return (
        relevance or 0.0,
        memory.importance,
        memory.confidence,
        recency(memory, now, half_life),
        frequency(memory, saturation),
    )


def total(values: tuple[float, ...], weights: tuple[float, ...]) -> float:
    if len(values) != len(weights):
        raise ValueError(f"{len(values)} factor values for {len(weights)} weights")
    return float(sum(map(mul, values, weights)))  # the sum a loop makes, in its order


def breakdown(
    values: tuple[float, ...],
    weights: tuple[float, ...],
    *,
    found_by: list[Stream],
    keyword_score: float | None = None,
    keyword_norm: float | None = None,
    semantic_similarity: float | None = None,
    semantic_norm: float | None = None,
    stream_relevance: float | None = None,
    author_named: bool | None = None,
    thread_support: float | None = None,
    time_matched: bool | None = None,
) -> ScoreBreakdown:
    # built from values computed here (not user input): constructed without re-validation,
    # which was a tenth of a context assembly's cost
    factors = {
        name: construct(Factor, {"value": v, "weight": w, "contribution": v * w})
        for name, v, w in zip(FACTORS, values, weights, strict=True)
    }
    return construct(
        ScoreBreakdown,
        {
            "relevance": factors["relevance"],
            "importance": factors["importance"],
            "confidence": factors["confidence"],
            "recency": factors["recency"],
            "frequency": factors["frequency"],
            "found_by": found_by,
            "keyword_score": keyword_score,
            "keyword_norm": keyword_norm,
            "semantic_similarity": semantic_similarity,
            "semantic_norm": semantic_norm,
            "stream_relevance": stream_relevance,
            "author_named": author_named,
            "thread_support": thread_support,
            "time_matched": time_matched,
        },
    )
