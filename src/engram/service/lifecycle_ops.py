"""The store operations the lifecycle rules run on, shared by writes through
:class:`~engram.service.lifecycle.LifecycleService` and maintenance runs
(:class:`~engram.service.maintenance.Maintenance`): commit a batch with its audit entries, embed,
keep vectors, find the facts a new one may duplicate or contradict, queue a review."""

from __future__ import annotations

from collections.abc import Sequence

from engram.actors import Actor
from engram.clock import Clock
from engram.embeddings.protocol import Embedder
from engram.ids import new_id
from engram.lifecycle.claims import lookup_terms
from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.dedup import Candidate, Fact, jaccard, word_set
from engram.lifecycle.reviews import ReviewItem
from engram.models import Layer, Memory, MemoryFilter, Status
from engram.service.audit import AuditLog
from engram.store import Change, EmbeddingUpdate, Store
from engram.store.protocol import Vector
from engram.text import content_hash


class LifecycleOps:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        audit: AuditLog,
        embedder: Embedder | None,
        config: LifecycleConfig | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._audit = audit
        self.embedder = embedder
        self.config = config or LifecycleConfig()

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def store(self) -> Store:
        return self._store

    def commit(self, batch: Sequence[Change], actor: Actor) -> None:
        """Write the changes and their audit entries in one transaction (ids, versions, the
        action; never a reason, which may quote memory text)."""
        by_env: dict[str, list[Change]] = {}
        for c in batch:
            by_env.setdefault(c.memory.environment_id, []).append(c)
        self.commit_groups(list(by_env.values()), actor)

    def commit_groups(self, groups: Sequence[Sequence[Change]], actor: Actor) -> None:
        """Write every group in one transaction, each group (one action on one environment)
        with its own audit entry."""
        groups = [g for g in groups if g]
        if not groups:
            return
        entries = [
            self._audit.entry(
                actor,
                f"memory.{group[-1].version.action.value}",
                environment_id=group[0].memory.environment_id,
                targets=list(dict.fromkeys(c.memory.id for c in group)),
                before={c.memory.id: (c.memory.version - 1) or None for c in reversed(group)},
                after={c.memory.id: c.memory.version for c in group},
            )
            for group in groups
        ]
        self._store.write([c for g in groups for c in g], audit=entries)

    def embed(self, texts: Sequence[str]) -> Vector | None:
        """One batch of vectors, or None in keyword-only mode."""
        if self.embedder is None or not texts:
            return None
        return self.embedder.embed_batch(list(texts))

    def store_vectors(self, memories: Sequence[Memory], vectors: Vector | None) -> None:
        """Keep vectors computed here so the indexer need not compute them again."""
        if self.embedder is None or vectors is None:
            return
        updates = [
            EmbeddingUpdate(m.id, content_hash(m.search_text()), vectors[i])
            for i, m in enumerate(memories)
            if m.status is Status.ACTIVE
        ]
        self._store.put_embeddings(self.embedder.model_id, updates)

    def candidates(
        self,
        env_id: str,
        text: str,
        vector: Vector | None,
        *,
        exclude: frozenset[str] = frozenset(),
        keyword: bool = True,
    ) -> list[Candidate[Memory]]:
        """Active facts in the environment like ``text``: keyword hits (scored by Jaccard) and,
        with a vector, nearest neighbours (scored by cosine too). With ``keyword`` off, only
        the nearest neighbours."""
        cfg = self.config
        flt = MemoryFilter(environment_ids=[env_id], layers=[Layer.FACT])
        hits = (
            self._store.keyword_search(lookup_terms(text), flt, limit=cfg.keyword_candidates)
            if keyword
            else []
        )
        cosine = self.nearest(env_id, vector) if vector is not None else {}
        ids = [i for i in dict.fromkeys([h.memory_id for h in hits] + list(cosine))]
        words = word_set(text)
        return [
            Candidate(m, jaccard(words, word_set(m.content)), cosine.get(m.id))
            for m in self._store.get([i for i in ids if i not in exclude])
            if m.status is Status.ACTIVE and m.layer is Layer.FACT
        ]

    def nearest(self, env_id: str, vector: Vector) -> dict[str, float]:
        """The nearest facts' ids (any status the vector index holds: active) and cosines."""
        if self.embedder is None:
            return {}
        flt = MemoryFilter(environment_ids=[env_id], layers=[Layer.FACT])
        near = self._store.vector_search(
            vector, self.embedder.model_id, flt, limit=self.config.vector_candidates
        )
        return {h.memory_id: h.score for h in near}

    def queue(self, memory: Memory, other: Fact, reason: str, similarity: float) -> ReviewItem:
        item = ReviewItem(
            id=new_id("rev_"),
            environment_id=memory.environment_id,
            memory_id=memory.id,
            other_id=other.id,
            reason=reason,
            similarity=round(similarity, 4),
            created_at=self._clock(),
        )
        self._store.reviews.put_review(item)
        return item
