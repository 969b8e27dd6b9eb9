"""Hybrid search: keyword (BM25) and semantic candidates fused into one relevance, ranked by the
five-factor score, each result with its breakdown.

Relevance is comparable across queries (``retrieval.fusion``), and nothing whose relevance is
below ``ScoringConfig.min_relevance`` is returned: a query that matches nothing finds nothing.
Returning a result counts as an access of it (only of what is returned)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numpy as np

from engram.actors import Actor
from engram.clock import Clock
from engram.embeddings.protocol import Embedder
from engram.errors import InvalidInput
from engram.extraction.turns import source_ids
from engram.limits import MAX_QUERY_CHARS, MAX_SEARCH_RESULTS
from engram.models import Layer, Memory, MemoryFilter, Status
from engram.retrieval.coverage import coverage
from engram.retrieval.expansion import Expansion, expand
from engram.retrieval.fusion import Fused, calibrated, fuse
from engram.retrieval.models import (
    ScoreBreakdown,
    ScoredMemory,
    SearchMode,
    SearchResult,
    Stream,
)
from engram.retrieval.provenance import Adjusted, Provenance, adjust
from engram.retrieval.scoring import (
    ScoringConfig,
    breakdown,
    factor_tuple,
    factor_values,
    layer_terms,
    total,
)
from engram.retrieval.when import named_times
from engram.service.accesses import AccessRecorder
from engram.service.environments import EnvironmentService
from engram.service.threads import own_threads
from engram.store import Store
from engram.store.protocol import Hit, KeywordQuery, RankFields, Vector, VectorQuery
from engram.trusted import construct


@dataclass(frozen=True, slots=True)
class Scoring:
    """One request of :meth:`SearchService.score_many`: candidates passing ``flt``, up to ``k``
    per stream; ``keyword``: its keyword hits when the caller has them already."""

    flt: MemoryFilter
    k: int
    keyword: Sequence[Hit] | None = None


class Ranked(NamedTuple):
    """A candidate scored from its rank fields, before its memory is read."""

    memory_id: str
    layer: Layer
    category: str
    score: float
    fused: Fused
    adjusted: Adjusted
    values: tuple[float, ...]
    weights: tuple[float, ...]


class SearchService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        embedder: Embedder | None,
        scoring: ScoringConfig | None = None,
        candidates: int = 100,
        accesses: AccessRecorder | None = None,
    ) -> None:
        self._store = store
        # reads are counted off the request's path (engram.service.accesses)
        self.accesses = accesses or AccessRecorder(store)
        self._clock = clock
        self._envs = environments
        self._embedder = embedder
        self.scoring = scoring or ScoringConfig()
        self._candidates = candidates
        self._last_query: tuple[tuple[str, str], Vector] | None = None

    @property
    def model_id(self) -> str | None:
        return None if self._embedder is None else self._embedder.model_id

    @property
    def semantic_available(self) -> bool:
        return self._embedder is not None

    def search(
        self,
        query: str,
        actor: Actor,
        *,
        environment: str | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        flt: MemoryFilter | None = None,
        include_superseded: bool = False,
        limit: int = 10,
        count_access: bool = True,
    ) -> SearchResult:
        """Search one environment. ``flt`` narrows by layer, category, tags, status and dates
        (its environment is replaced by the one resolved here)."""
        started = time.perf_counter()
        env = self._envs.resolve(environment, actor)
        flt = own_threads(
            self._filter(flt, env.id, include_superseded), actor, self._store.conversations
        )
        items = self.rank(query, flt, mode=mode, limit=limit)
        if count_access and items:
            self.accesses.record([i.memory.id for i in items], self._clock())
        return SearchResult(
            query=query,
            mode=mode,
            items=items,
            semantic_available=self.semantic_available,
            took_ms=round((time.perf_counter() - started) * 1000, 3),
        )

    @staticmethod
    def _filter(flt: MemoryFilter | None, env_id: str, include_superseded: bool) -> MemoryFilter:
        flt = flt or MemoryFilter()
        statuses = list(flt.statuses)
        if include_superseded and Status.SUPERSEDED not in statuses:
            statuses.append(Status.SUPERSEDED)
        return flt.model_copy(update={"environment_ids": [env_id], "statuses": statuses})

    def rank(
        self,
        query: str,
        flt: MemoryFilter,
        *,
        mode: SearchMode,
        limit: int,
        keyword: Sequence[Hit] | None = None,
    ) -> list[ScoredMemory]:
        """Rank memories matching ``flt`` (environment already resolved) for ``query``.
        ``keyword``: keyword hits already fetched by the caller. Only the memories returned
        are read."""
        self._check(query, mode, limit)
        if not query.strip():
            return self._rank_without_query(flt, limit, self._clock())
        k = max(self._candidates, limit * 3)
        return self.materialize(self.score(query, flt, mode=mode, k=k, keyword=keyword)[:limit])

    def _check(self, query: str, mode: SearchMode, limit: int) -> None:
        if not 1 <= limit <= MAX_SEARCH_RESULTS:
            raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_RESULTS}, got {limit}")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
        if mode is SearchMode.SEMANTIC and self._embedder is None:
            raise InvalidInput("semantic search needs an embedder; this Engram is keyword-only")

    def score(
        self,
        query: str,
        flt: MemoryFilter,
        *,
        mode: SearchMode,
        k: int,
        keyword: Sequence[Hit] | None = None,
    ) -> list[Ranked]:
        """Every candidate of ``query`` (up to ``k`` per stream) over the relevance floor,
        scored from a few columns without reading the memories, best first."""
        return self.score_many(query, [Scoring(flt, k, keyword)], mode=mode)[0]

    def score_many(
        self,
        query: str,
        requests: Sequence[Scoring],
        *,
        mode: SearchMode,
        keyword: tuple[MemoryFilter, int] | None = None,
    ) -> list[list[Ranked]]:
        """:meth:`score` for several filters of one query (an assembly's layers): the same
        answers, with one vector search and one read of rank fields for all of them.
        ``keyword``: one keyword search (a filter and a limit) whose hits each request takes
        by its filter's layers, instead of a search per request."""
        self._check(query, mode, 1)
        if not requests:
            return []
        floor = self.scoring.min_relevance
        every = self._candidates_for(query, requests, mode, keyword)
        every = [{i: f for i, f in fused.items() if f.relevance >= floor} for fused in every]
        wanted = list(dict.fromkeys(i for fused in every for i in fused))
        if not wanted:
            return [[] for _ in requests]
        fields = {r.memory_id: r for r in self._store.rank_fields(wanted)}
        now = self._clock()
        return [self._scored(query, fused, fields, now) for fused in every]

    def _scored(
        self, query: str, fused: dict[str, Fused], fields: dict[str, RankFields], now: datetime
    ) -> list[Ranked]:
        rows = [r for r in fields.values() if r.memory_id in fused]  # in the store's order
        adjusted = adjust(
            query,
            {r.memory_id: fused[r.memory_id].relevance for r in rows},
            {r.memory_id: Provenance(r.author, r.thread, r.created_at) for r in rows},
            author_weight=self.scoring.author_weight,
            thread_weight=self.scoring.thread_weight,
            thread_top=self.scoring.thread_top,
            times=named_times(query, now),
            time_weight=self.scoring.time_weight,
        )
        scored = []
        saturation = self.scoring.frequency_saturation
        terms = {layer: layer_terms(self.scoring, layer, True) for layer in Layer}
        for row in rows:
            a = adjusted[row.memory_id]
            weights, half_life = terms[row.layer]
            values = factor_tuple(row, a.relevance, now, half_life, saturation)
            scored.append(
                Ranked(
                    row.memory_id,
                    row.layer,
                    row.category,
                    total(values, weights),
                    fused[row.memory_id],
                    a,
                    values,
                    weights,
                )
            )
        scored.sort(key=lambda r: (-r.score, r.memory_id))
        return scored

    def materialize(self, ranked: Sequence[Ranked]) -> list[ScoredMemory]:
        """The memories of ``ranked`` (those that still exist), with their breakdowns."""
        memories = {m.id: m for m in self._store.get([r.memory_id for r in ranked])}
        return [self.scored(r, memories[r.memory_id]) for r in ranked if r.memory_id in memories]

    def scored(self, r: Ranked, memory: Memory) -> ScoredMemory:
        """``memory`` (read back for ``r``) with its score and breakdown."""
        # every field computed here or read back from the store: no re-validation
        return construct(
            ScoredMemory,
            {
                "memory": memory,
                "score": r.score,
                "breakdown": self.breakdown_of(r),
                "sources": source_ids(memory),
            },
        )

    def breakdown_of(self, r: Ranked) -> ScoreBreakdown:
        """The breakdown of ``r``'s score."""
        return breakdown(
            r.values,
            r.weights,
            found_by=self._streams(r.fused),
            keyword_score=r.fused.keyword_score,
            keyword_norm=r.fused.keyword_norm,
            semantic_similarity=r.fused.similarity,
            semantic_norm=r.fused.similarity_norm,
            stream_relevance=r.fused.relevance,
            author_named=r.adjusted.author_named,
            thread_support=r.adjusted.thread_support,
            time_matched=r.adjusted.time_matched,
        )

    def _candidates_for(
        self,
        query: str,
        requests: Sequence[Scoring],
        mode: SearchMode,
        shared: tuple[MemoryFilter, int] | None = None,
    ) -> list[dict[str, Fused]]:
        """Every candidate of either stream, fused, for each request."""
        vector: Vector | None = None
        if mode is not SearchMode.KEYWORD and self._embedder is not None:
            vector = self._query_vector(self._embedder, query)
            if not np.any(vector):
                vector = None
        terms = expand(query)  # the keyword stream also looks for the kinds the query names
        found: list[Sequence[Hit]] = [() for _ in requests]
        similarity: list[dict[str, float]] = [{} for _ in requests]
        hits: list[set[str]] = [set() for _ in requests]
        # one keyword search that every request takes its hits from: both streams in one call
        search = shared
        if shared is None and len(requests) == 1 and requests[0].keyword is None:
            search = (requests[0].flt, requests[0].k)
        if mode is not SearchMode.SEMANTIC and vector is not None and search is not None:
            assert self._embedder is not None
            # both streams in one call (PostgreSQL: at once), the keyword hits' similarities
            # with them
            streams = self._store.search_streams(
                KeywordQuery(query, *search, terms.also),
                vector,
                self._embedder.model_id,
                [VectorQuery(r.flt, r.k) for r in requests],
            )
            for at, r in enumerate(requests):
                found[at] = _taken(r, streams.keyword, shared)
                similarity[at] = {h.memory_id: h.score for h in streams.nearest[at]}
                hits[at] = set(similarity[at])
                for h in found[at]:
                    if h.memory_id not in hits[at] and h.memory_id in streams.similarity:
                        similarity[at][h.memory_id] = streams.similarity[h.memory_id]
            vector = None  # found
        elif mode is not SearchMode.SEMANTIC:
            every = (
                []
                if shared is None
                else self._store.keyword_search(query, shared[0], limit=shared[1], also=terms.also)
            )
            found = [
                _taken(r, every, shared)
                if shared is not None or r.keyword is not None
                else self._store.keyword_search(query, r.flt, limit=r.k, also=terms.also)
                for r in requests
            ]
        cover = [self._coverage(terms, hits) for hits in found]
        # a hit that answers none of the question's words (an ambiguous value alone) is none
        found = [[h for h in hits if cover[at][h.memory_id] > 0] for at, hits in enumerate(found)]
        keyword = [{h.memory_id: h.score for h in hits} for hits in found]
        if vector is not None and self._embedder is not None:
            # the nearest of each filter, and the similarity of its keyword hits not among
            # them, in one call
            answers = self._store.vector_search_many(
                vector,
                self._embedder.model_id,
                [
                    VectorQuery(r.flt, r.k, list(kw))
                    for r, kw in zip(requests, keyword, strict=True)
                ],
            )
            for at, answer in enumerate(answers):
                similarity[at] = {h.memory_id: h.score for h in answer.hits}
                hits[at] = set(similarity[at])
                similarity[at].update(answer.scores)
        if mode is SearchMode.SEMANTIC:
            low, high = self.scoring.similarity_range(self.model_id)
            return [
                {
                    i: Fused(c, None, None, s, c, True)
                    for i, s in sim.items()
                    if (c := calibrated(s, low, high)) is not None
                }
                for sim in similarity
            ]
        return [
            fuse(
                keyword[at],
                similarity[at],
                self.scoring.keyword_weight,
                self.scoring.semantic_weight,
                hits[at],
                self.scoring.similarity_range(self.model_id),
                cover[at],
            )
            for at in range(len(requests))
        ]

    @staticmethod
    def _coverage(terms: Expansion, found: Sequence[Hit]) -> dict[str, float]:
        """How much of the query each keyword hit answers (from the words it matched: the
        query's own, and values of the kinds it names)."""
        n = len(terms.words)
        out = {}
        for h in found:
            own = terms.covered(h.matched)
            near = terms.covered(h.matched | h.matched_context) - own
            out[h.memory_id] = coverage(n, len(own), len(near)) if own or near else 0.0
        return out

    def _query_vector(self, embedder: Embedder, query: str) -> Vector:
        # context assembly ranks each layer for the same query: embed it once
        last = self._last_query
        if last is not None and last[0] == (embedder.model_id, query):
            return last[1]
        vector: Vector = embedder.embed_batch([query])[0]
        self._last_query = ((embedder.model_id, query), vector)
        return vector

    @staticmethod
    def _streams(fused: Fused) -> list[Stream]:
        found: list[Stream] = []
        if fused.keyword_score is not None:
            found.append("keyword")
        if fused.semantic_hit:
            found.append("semantic")
        return found

    def _rank_without_query(
        self, flt: MemoryFilter, limit: int, now: datetime
    ) -> list[ScoredMemory]:
        # no query: the most important and most recent memories, ranked by the other factors
        pool = self._store.list_memories(flt, limit=max(limit * 5, 100), order="-importance")
        pool += self._store.list_memories(flt, limit=max(limit * 5, 100), order="-updated_at")
        seen: dict[str, Memory] = {m.id: m for m in pool}
        ranked = []
        for memory in seen.values():
            values, weights = factor_values(memory, None, now, self.scoring)
            ranked.append(
                ScoredMemory(
                    memory=memory,
                    score=total(values, weights),
                    breakdown=breakdown(values, weights, found_by=[]),
                )
            )
        ranked.sort(key=lambda s: (-s.score, s.memory.id))
        return ranked[:limit]


def _taken(r: Scoring, every: Sequence[Hit], shared: tuple[MemoryFilter, int] | None) -> list[Hit]:
    """The keyword hits of request ``r``: those of the search shared by the requests that fall
    to it (by its filter's layers), else its own (given, or ``every``: its search's)."""
    if shared is not None:
        return [h for h in every if not r.flt.layers or h.layer in r.flt.layers]
    return list(r.keyword if r.keyword is not None else every)
