"""Hybrid search: keyword (BM25) and semantic candidates fused into one relevance, ranked by the
five-factor score, each result with its breakdown.

Relevance is comparable across queries (``retrieval.fusion``), and nothing whose relevance is
below ``ScoringConfig.min_relevance`` is returned: a query that matches nothing finds nothing.
Returning a result counts as an access of it (only of what is returned)."""

from __future__ import annotations

import time
from datetime import datetime

import numpy as np

from engram.actors import Actor
from engram.clock import Clock
from engram.embeddings.protocol import Embedder
from engram.errors import InvalidInput
from engram.extraction.turns import source_ids
from engram.models import Layer, Memory, MemoryFilter, Status
from engram.retrieval.coverage import coverage, terms
from engram.retrieval.fusion import Fused, calibrated, fuse
from engram.retrieval.models import ScoredMemory, SearchMode, SearchResult, Stream
from engram.retrieval.provenance import Provenance, adjust
from engram.retrieval.scoring import ScoringConfig, breakdown, factor_values, total
from engram.service.environments import EnvironmentService
from engram.store import Store
from engram.store.protocol import Vector

MAX_LIMIT = 200
MAX_QUERY_CHARS = 4000


class SearchService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        embedder: Embedder | None,
        scoring: ScoringConfig | None = None,
        candidates: int = 100,
    ) -> None:
        self._store = store
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
        actor: Actor,
        query: str,
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
        flt = self._filter(flt, env.id, include_superseded)
        items = self.rank(query, flt, mode=mode, limit=limit)
        if count_access and items:
            self._store.record_access([i.memory.id for i in items], self._clock())
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
        keyword: dict[str, float] | None = None,
        loaded: dict[str, Memory] | None = None,
    ) -> list[ScoredMemory]:
        """Rank memories matching ``flt`` (environment already resolved) for ``query``.
        ``keyword``: BM25 hits already fetched by the caller (context assembly fetches them
        once for every layer); ``loaded``: memories the caller has read already (it receives
        those read here)."""
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
        if mode is SearchMode.SEMANTIC and self._embedder is None:
            raise InvalidInput("semantic search needs an embedder; this Engram is keyword-only")
        now = self._clock()
        if not query.strip():
            return self._rank_without_query(flt, limit, now)
        loaded = {} if loaded is None else loaded
        fused = self._candidates_for(
            query, flt, mode, max(self._candidates, limit * 3), keyword, loaded
        )
        floor = self.scoring.min_relevance
        fused = {i: f for i, f in fused.items() if f.relevance >= floor}
        if not fused:
            return []
        # score every candidate from a few columns; load whole memories only for those returned
        rows = self._store.rank_fields(list(fused))
        adjusted = adjust(
            query,
            {r.memory_id: fused[r.memory_id].relevance for r in rows},
            {r.memory_id: Provenance(r.author, r.thread) for r in rows},
            author_weight=self.scoring.author_weight,
            thread_weight=self.scoring.thread_weight,
            thread_top=self.scoring.thread_top,
        )
        scored = []
        for fields in rows:
            a = adjusted[fields.memory_id]
            values, weights = factor_values(fields, a.relevance, now, self.scoring)
            f = fused[fields.memory_id]
            scored.append((total(values, weights), fields.memory_id, f, a, values, weights))
        scored.sort(key=lambda s: (-s[0], s[1]))
        top = scored[:limit]
        memories = {i: loaded[i] for i in (s[1] for s in top) if i in loaded}
        missing = [s[1] for s in top if s[1] not in memories]
        memories.update((m.id, m) for m in self._store.get(missing))
        return [
            ScoredMemory(
                memory=memories[memory_id],
                score=value,
                breakdown=breakdown(
                    values,
                    weights,
                    found_by=self._streams(f),
                    keyword_score=f.keyword_score,
                    keyword_norm=f.keyword_norm,
                    semantic_similarity=f.similarity,
                    semantic_norm=f.similarity_norm,
                    stream_relevance=f.relevance,
                    author_named=a.author_named,
                    thread_support=a.thread_support,
                ),
                sources=source_ids(memories[memory_id]),
            )
            for value, memory_id, f, a, values, weights in top
            if memory_id in memories
        ]

    def keyword_by_layer(
        self, query: str, flt: MemoryFilter, limit: int
    ) -> dict[Layer, dict[str, float]]:
        """One keyword search over all layers of ``flt``, its hits split by layer."""
        hits = self._store.keyword_search(query, flt, limit=limit)
        ids = [h.memory_id for h in hits]
        layers = {f.memory_id: f.layer for f in self._store.rank_fields(ids)}
        out: dict[Layer, dict[str, float]] = {layer: {} for layer in Layer}
        for h in hits:
            if h.memory_id in layers:
                out[layers[h.memory_id]][h.memory_id] = h.score
        return out

    def _candidates_for(
        self,
        query: str,
        flt: MemoryFilter,
        mode: SearchMode,
        k: int,
        known: dict[str, float] | None = None,
        loaded: dict[str, Memory] | None = None,
    ) -> dict[str, Fused]:
        """Every candidate of either stream, fused; ``loaded`` receives the memories read to
        measure keyword coverage."""
        keyword: dict[str, float] = {}
        similarity: dict[str, float] = {}
        hits: set[str] = set()
        if mode is not SearchMode.SEMANTIC:
            if known is not None:
                keyword = known
            else:
                found = self._store.keyword_search(query, flt, limit=k)
                keyword = {h.memory_id: h.score for h in found}
        if mode is not SearchMode.KEYWORD and self._embedder is not None:
            vector = self._query_vector(self._embedder, query)
            if np.any(vector):
                model = self._embedder.model_id
                similarity = {
                    h.memory_id: h.score
                    for h in self._store.vector_search(vector, model, flt, limit=k)
                }
                hits = set(similarity)
                missing = [i for i in keyword if i not in similarity]
                if missing:
                    similarity.update(self._store.vector_scores(vector, model, missing))
        if mode is SearchMode.SEMANTIC:
            low, high = self.scoring.similarity_range(self.model_id)
            return {
                i: Fused(c, None, None, s, c, True)
                for i, s in similarity.items()
                if (c := calibrated(s, low, high)) is not None
            }
        return fuse(
            keyword,
            similarity,
            self.scoring.keyword_weight,
            self.scoring.semantic_weight,
            hits,
            self.scoring.similarity_range(self.model_id),
            self._coverage(query, keyword, loaded if loaded is not None else {}),
        )

    def _coverage(
        self, query: str, keyword: dict[str, float], loaded: dict[str, Memory]
    ) -> dict[str, float]:
        """How much of the query each keyword candidate contains (reading the candidates)."""
        if not keyword:
            return {}
        wanted = terms(query)
        for memory in self._store.get([i for i in keyword if i not in loaded]):
            loaded[memory.id] = memory
        return {
            i: coverage(wanted, m.search_text(), m.keyword_context)
            for i, m in loaded.items()
            if i in keyword
        }

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
