"""Fusing the keyword and semantic streams into one relevance in [0, 1].

Measured on LoCoMo (see bench/locomo): min-max score fusion, 0.4 × BM25 + 0.6 × cosine, beats
reciprocal-rank fusion clearly when one stream is lexical and the other a static embedding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fused:
    relevance: float
    keyword_score: float | None
    keyword_norm: float | None
    similarity: float | None
    similarity_norm: float | None
    semantic_hit: bool = False


def _minmax(values: Mapping[str, float], floor: float) -> dict[str, float]:
    if not values:
        return {}
    # the low end is the candidates' minimum, but never above the model's baseline similarity
    # of unrelated texts, so that a handful of near-equal candidates are not spread to 0..1
    lo, hi = min(min(values.values()), floor), max(values.values())
    if hi - lo < 1e-12:
        return {k: 1.0 for k in values}
    return {k: (v - lo) / (hi - lo) for k, v in values.items()}


def fuse(
    keyword: Mapping[str, float],
    similarity: Mapping[str, float],
    keyword_weight: float,
    semantic_weight: float,
    semantic_hits: set[str] | frozenset[str] = frozenset(),
    similarity_floor: float = 0.0,
) -> dict[str, Fused]:
    """``keyword``: BM25 of keyword candidates; ``similarity``: cosine of every candidate (from
    either stream) that has a vector; ``semantic_hits``: the ids the semantic stream itself
    returned. BM25 is scaled by its maximum (a non-match scores 0), cosine by min-max over the
    candidates with the low end at most ``similarity_floor``."""
    top = max(keyword.values(), default=0.0)
    kw_norm = {k: v / top for k, v in keyword.items()} if top > 0 else {}
    sim_norm = _minmax(similarity, similarity_floor)
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
