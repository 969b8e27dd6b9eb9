"""A maintenance run over one environment: the same dedup and contradiction rules as on write,
applied to every active fact against the older ones (so memories stored without the lifecycle
are covered too), then decay flagging, then compaction of cold episodes.

A dry run computes the same report and writes nothing.
"""

from __future__ import annotations

import math
from time import perf_counter

from engram.actors import Actor
from engram.lifecycle import changes
from engram.lifecycle.compaction import pick_facts
from engram.lifecycle.decay import (
    flag_reason,
    idle_days,
    is_cold,
    last_touched,
    retention,
    should_flag,
)
from engram.lifecycle.decide import Move, decide
from engram.lifecycle.report import LifecycleEvent, MaintenanceReport
from engram.lifecycle.reviews import ReviewStatus
from engram.models import (
    Action,
    Environment,
    Layer,
    Memory,
    MemoryFilter,
    NewMemory,
    Source,
)
from engram.service.lifecycle_ops import LifecycleOps
from engram.store import Change
from engram.store.protocol import Vector

_PAGE = 1000
_EMBED_BATCH = 256
_ALL_REVIEWS = 1_000_000


class Maintenance:
    def __init__(self, ops: LifecycleOps, env: Environment, actor: Actor, *, dry_run: bool) -> None:
        self._ops = ops
        self._store = ops.store
        self._cfg = ops.config
        self._env = env
        self._actor = actor
        self._dry = dry_run
        self._now = ops.clock()
        self._gone: set[str] = set()
        self.merged: list[LifecycleEvent] = []
        self.superseded: list[LifecycleEvent] = []
        self.queued: list[LifecycleEvent] = []
        self.flagged: list[LifecycleEvent] = []
        self.compacted: list[LifecycleEvent] = []
        self.scanned = 0

    def run(self) -> MaintenanceReport:
        start = perf_counter()
        self._sweep_facts()
        self._flag()
        self._compact()
        return MaintenanceReport(
            dry_run=self._dry,
            environment_ids=[self._env.id],
            scanned=self.scanned,
            merged=self.merged,
            superseded=self.superseded,
            queued=self.queued,
            flagged=self.flagged,
            compacted=self.compacted,
            seconds=round(perf_counter() - start, 3),
        )

    # -- helpers -------------------------------------------------------------------------------
    def _all(self, flt: MemoryFilter) -> list[Memory]:
        """Every match, loaded before anything changes (offsets shift once statuses do)."""
        flt = flt.model_copy(update={"environment_ids": [self._env.id]})
        out: list[Memory] = []
        while True:
            page = self._store.list_memories(flt, limit=_PAGE, offset=len(out), order="created_at")
            out.extend(page)
            if len(page) < _PAGE:
                return out

    def _commit(self, batch: list[Change]) -> None:
        if not self._dry:
            self._ops.commit(batch, self._actor)

    # -- dedup and contradiction ---------------------------------------------------------------
    def _sweep_facts(self) -> None:
        facts = self._all(MemoryFilter(layers=[Layer.FACT]))
        self.scanned += len(facts)
        position = {m.id: i for i, m in enumerate(facts)}
        reviews = self._store.reviews.list_reviews(
            [self._env.id], list(ReviewStatus), limit=_ALL_REVIEWS
        )
        known = {(r.memory_id, r.other_id) for r in reviews}
        vectors: Vector | None = None
        for i, fact in enumerate(facts):
            if fact.id in self._gone:
                continue
            if self._ops.embedder is not None and i % _EMBED_BATCH == 0:
                batch = facts[i : i + _EMBED_BATCH]
                vectors = self._ops.embed([f.content for f in batch])
                if not self._dry:  # facts stored without vectors become searchable by meaning
                    self._ops.store_vectors(batch, vectors)
            vector = None if vectors is None else vectors[i % _EMBED_BATCH]
            older = [
                c
                for c in self._ops.candidates(
                    self._env.id, fact.content, vector, exclude=frozenset({fact.id})
                )
                if c.memory.id not in self._gone and position.get(c.memory.id, math.inf) < i
            ]
            decision = decide(fact.content, older, self._cfg)
            if decision.candidate is None:
                continue
            other = decision.candidate.memory
            if decision.move is Move.MERGE:
                self._gone.add(fact.id)
                self.merged.append(
                    LifecycleEvent(memory_id=fact.id, other_id=other.id, reason=decision.reason)
                )
                self._commit(
                    changes.merge(fact, other, decision.reason, self._actor, self._now, self._cfg)
                )
            elif decision.move is Move.SUPERSEDE:
                self._gone.add(other.id)
                self.superseded.append(
                    LifecycleEvent(memory_id=other.id, other_id=fact.id, reason=decision.reason)
                )
                self._commit(
                    changes.supersede(other, fact, decision.reason, self._actor, self._now)
                )
            elif decision.move is Move.REVIEW and (fact.id, other.id) not in known:
                known.add((fact.id, other.id))
                self.queued.append(
                    LifecycleEvent(memory_id=fact.id, other_id=other.id, reason=decision.reason)
                )
                if not self._dry:
                    self._ops.queue(fact, other, decision.reason, decision.candidate.similarity)

    # -- decay ---------------------------------------------------------------------------------
    def _flag(self) -> None:
        cfg = self._cfg
        for memory in self._all(MemoryFilter(max_importance=cfg.flag_importance)):
            if memory.id in self._gone or not should_flag(memory, self._now, cfg):
                continue
            why = flag_reason(memory, self._now, cfg)
            self._gone.add(memory.id)
            self.flagged.append(LifecycleEvent(memory_id=memory.id, reason=why))
            self._commit([changes.flag(memory, why, self._actor, self._now)])

    # -- compaction ----------------------------------------------------------------------------
    def _compact(self) -> None:
        for episode in self._all(MemoryFilter(layers=[Layer.EPISODE])):
            if episode.id in self._gone or not is_cold(episode, self._now, self._cfg):
                continue
            self.scanned += 1
            self._compact_one(episode)

    def _compact_one(self, episode: Memory) -> None:
        picks = pick_facts(episode, self._cfg)
        if not picks:
            return
        batch: list[Change] = []
        linked: list[str] = []
        created: list[Memory] = []
        reinforced: dict[str, Memory] = {}
        for pick in picks:
            vectors = self._ops.embed([pick.content])
            cands = self._ops.candidates(
                self._env.id, pick.content, None if vectors is None else vectors[0]
            )
            decision = decide(pick.content, cands, self._cfg, contradictions=False)
            if decision.move is Move.MERGE and decision.candidate is not None:
                target = reinforced.get(decision.candidate.memory.id, decision.candidate.memory)
                reinforced[target.id] = changes.step(
                    target, self._now, reinforcement_count=target.reinforcement_count + 1
                )
                if target.id not in linked:
                    linked.append(target.id)
                continue
            new = NewMemory(
                content=pick.content,
                category=pick.category,
                tags=episode.tags,
                importance=episode.importance,
                confidence=episode.confidence,
                source=Source.CONSOLIDATED,
                metadata={"compacted_from": episode.id},
            )
            fact = changes.build(self._env.id, new, self._actor, self._now)
            why = f"compacted from episode {episode.id}"
            batch.append(changes.record(fact, Action.CREATE, self._actor, why))
            created.append(fact)
            linked.append(fact.id)
        for target in reinforced.values():
            why = f"reinforced by compaction of episode {episode.id}"
            batch.append(changes.record(target, Action.MERGE, self._actor, why))
        batch.append(changes.archive(episode, linked, self._actor, self._now))
        score = retention(episode, self._now, self._cfg)
        counts = f"{len(created)} new facts, {len(reinforced)} reinforced"
        idle = (
            f"idle {idle_days(episode, self._now):.0f} days, "
            f"since {last_touched(episode).date().isoformat()}"
        )
        reason = f"cold episode ({idle}; retention {score:.2f} < {self._cfg.cold_retention}): " + (
            f"would be archived with {counts}" if self._dry else counts
        )
        self.compacted.append(
            LifecycleEvent(
                memory_id=episode.id,
                reason=reason,
                # a dry run makes no fact: the ids built here are never stored
                created=[] if self._dry else [f.id for f in created],
                new_facts=[f.content for f in created],
                reinforced=list(reinforced),
            )
        )
        self._gone.add(episode.id)
        self._commit(batch)
