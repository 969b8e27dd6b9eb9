"""Fusing the keyword and semantic streams into one relevance in [0, 1], comparable across
queries.

- **Keyword**: BM25 scaled by the best score of the query's results, times the share of the
  query's words the memory contains (``retrieval.coverage``). A lone hit on one word of a
  four-word question scores at most 0.25, not 1.
- **Semantic**: cosine mapped linearly from the model's "unrelated" level (0) to its
  "near-paraphrase" level (1), fixed per model (``scoring.SIMILARITY_RANGES``), not stretched
  over each query's candidates, so the best of a set of unrelated memories stays low.

Relevance is ``0.4 × keyword + 0.6 × semantic`` (weights in ``ScoringConfig``); measured on
LoCoMo (see bench/locomo).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Fused(NamedTuple):
    relevance: float
    keyword_score: float | None
    keyword_norm: float | None
    similarity: float | None
    similarity_norm: float | None
    semantic_hit: bool = False


def calibrated(similarity: float, low: float, high: float) -> float:
    """Cosine on the model's own scale: ``low`` (unrelated) is 0, ``high`` is 1."""
    return min(1.0, max(0.0, (similarity - low) / (high - low)))


def fuse(
    keyword: Mapping[str, float],
    similarity: Mapping[str, float],
    keyword_weight: float,
    semantic_weight: float,
    semantic_hits: set[str] | frozenset[str] = frozenset(),
    similarity_range: tuple[float, float] = (0.0, 1.0),
    coverage: Mapping[str, float] | None = None,
) -> dict[str, Fused]:
    """``keyword``: BM25 of keyword candidates; ``similarity``: cosine of every candidate (from
    either stream) that has a vector; ``semantic_hits``: the ids the semantic stream itself
    returned; ``coverage``: the share of the query each keyword candidate contains (1 when
    absent)."""
    top = max(keyword.values(), default=0.0)
    cover = coverage or {}
    kw_norm = {k: v / top * cover.get(k, 1.0) for k, v in keyword.items()} if top > 0 else {}
    low, high = similarity_range
    sim_norm = {k: calibrated(v, low, high) for k, v in similarity.items()}
    total = keyword_weight + semantic_weight
    out: dict[str, Fused] = {}
    for memory_id in set(keyword) | set(similarity):
        kn = kw_norm.get(memory_id, 0.0)
        sn = sim_norm.get(memory_id, 0.0)
        # with no vectors at all (keyword-only mode) relevance is the keyword score alone
        relevance = (keyword_weight * kn + semantic_weight * sn) / total if similarity else kn
        out[memory_id] = Fused(
            relevance=relevance,
            keyword_score=keyword.get(memory_id),
            keyword_norm=kw_norm.get(memory_id) if memory_id in keyword else None,
            similarity=similarity.get(memory_id),
            similarity_norm=sim_norm.get(memory_id),
            semantic_hit=memory_id in semantic_hits,
        )
    return out
