"""The write path every edge uses to create memories: dedup and contradiction on facts (unless
the caller opts out with ``lifecycle: false``), one candidate pass and one commit per batch.

Within a batch, a fact sees the facts written before it in the same batch (a duplicate of an
earlier item merges into it). The whole batch is one transaction: all stored or none.
Candidates come from the environment's in-memory index when it is current
(:mod:`engram.service.fact_index`), else from the store's keyword search; with an embedder the
nearest stored vectors are added when keyword evidence decides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engram.actors import Actor
from engram.lifecycle import changes
from engram.lifecycle.claims import lookup_terms
from engram.lifecycle.decide import Decision, Move, decide
from engram.lifecycle.dedup import Candidate, jaccard, word_set
from engram.lifecycle.index import CandidateIndex
from engram.lifecycle.report import WriteAction, WriteOutcome
from engram.models import Action, Layer, Memory, NewMemory, Status
from engram.scrub import Scrubber, scrub_value
from engram.service.fact_index import FactIndexes
from engram.service.lifecycle_ops import LifecycleOps
from engram.store import Change
from engram.store.protocol import Vector


@dataclass
class _Batch:
    """What a batch has written so far (not yet committed)."""

    env_id: str
    index: CandidateIndex | None
    latest: dict[str, Memory] = field(default_factory=dict)
    """The newest state of every memory the batch changed."""
    pending: CandidateIndex = field(default_factory=CandidateIndex)
    """The batch's own active facts, so later items see earlier ones."""
    groups: list[list[Change]] = field(default_factory=list)
    embedded: list[tuple[Memory, int]] = field(default_factory=list)
    """New active memories and the row of their vector."""
    reviews: list[tuple[int, Memory, Memory, Decision]] = field(default_factory=list)

    def add(self, group: list[Change]) -> None:
        self.groups.append(group)
        for c in group:
            self.latest[c.memory.id] = c.memory
            self.pending.put(c.memory)
            if self.index is not None:
                self.index.remove(c.memory.id)  # the batch's state wins until the commit


class WritePath:
    def __init__(self, ops: LifecycleOps, scrubber: Scrubber, indexes: FactIndexes) -> None:
        self._ops = ops
        self._scrubber = scrubber
        self._indexes = indexes

    def remember_many(
        self, env_id: str, items: Sequence[NewMemory], actor: Actor
    ) -> list[WriteOutcome]:
        cleaned = [scrub_value(self._scrubber, item) for item in items]
        checked = [i for i, (new, _) in enumerate(cleaned) if _checked(new)]
        vectors = self._ops.embed([cleaned[i][0].content for i in checked])
        row_of = {item: row for row, item in enumerate(checked)}
        with self._indexes.lock:
            index = self._indexes.index(env_id, len(checked))
            before = self._indexes.stamp
            batch = _Batch(env_id, index)
            outcomes = []
            now = self._ops.clock()
            for i, (new, found) in enumerate(cleaned):
                redactions = found.as_dict()
                memory = changes.build(env_id, new, actor, now, redactions=redactions)
                if i not in row_of:
                    batch.add([changes.record(memory, Action.CREATE, actor, "")])
                    outcomes.append(
                        WriteOutcome(
                            action=WriteAction.CREATED, memory=memory, redactions=redactions
                        )
                    )
                    continue
                row = row_of[i]
                vector = None if vectors is None else vectors[row]
                decision = self._decide(batch, new.content, vector)
                outcomes.append(self._apply(batch, i, memory, decision, row, actor, redactions))
            flat = [c for group in batch.groups for c in group]
            try:
                self._ops.commit_groups(batch.groups, actor)
            except BaseException:
                self._indexes.failed()
                raise
            self._indexes.committed(before, flat)
        self._ops.store_vectors(
            [m for m, _ in batch.embedded], _rows(vectors, [r for _, r in batch.embedded])
        )
        for at, memory, target, decision in batch.reviews:
            similarity = decision.candidate.similarity if decision.candidate else 0.0
            item = self._ops.queue(memory, target, decision.reason, similarity)
            outcomes[at] = outcomes[at].model_copy(update={"review_id": item.id})
        return outcomes

    # -- one fact --------------------------------------------------------------------------
    def _candidates(self, batch: _Batch, text: str, vector: Vector | None) -> list[Candidate]:
        cfg = self._ops.config
        words = word_set(text)
        terms = word_set(lookup_terms(text))
        found: dict[str, Candidate] = {}
        if batch.index is not None:
            for c in batch.index.lookup(terms, words, cfg.keyword_candidates):
                found[c.memory.id] = c
            if vector is not None:
                near = self._ops.nearest(batch.env_id, vector)
                for memory_id, cosine in near.items():
                    memory = batch.index.get(memory_id) or batch.latest.get(memory_id)
                    if memory is None:
                        continue
                    score = jaccard(words, word_set(memory.content))
                    found[memory_id] = Candidate(memory, score, cosine)
        else:
            for c in self._ops.candidates(batch.env_id, text, vector):
                found[c.memory.id] = c
        # the batch's own changes win over what the store or the index holds
        for memory_id in list(found):
            if memory_id in batch.latest:
                del found[memory_id]
        for c in batch.pending.lookup(terms, words, cfg.keyword_candidates):
            found[c.memory.id] = c
        return list(found.values())

    def _decide(self, batch: _Batch, text: str, vector: Vector | None) -> Decision:
        cfg = self._ops.config
        if batch.index is None:
            # the store's keyword search first; nearest neighbours only if it decides nothing
            keyword = self._candidates(batch, text, None)
            decision = decide(text, keyword, cfg)
            if vector is None or decision.move in (Move.MERGE, Move.SUPERSEDE):
                return decision
            near = self._ops.candidates(batch.env_id, text, vector, keyword=False)
            merged = {c.memory.id: c for c in keyword} | {
                c.memory.id: c for c in near if c.memory.id not in batch.latest
            }
            return decide(text, list(merged.values()), cfg)
        decision = decide(text, self._candidates(batch, text, None), cfg)
        if vector is None or decision.move in (Move.MERGE, Move.SUPERSEDE):
            return decision
        return decide(text, self._candidates(batch, text, vector), cfg)

    def _apply(
        self,
        batch: _Batch,
        at: int,
        memory: Memory,
        decision: Decision,
        row: int,
        actor: Actor,
        redactions: dict[str, int],
    ) -> WriteOutcome:
        cfg, now = self._ops.config, self._ops.clock()
        created = changes.record(memory, Action.CREATE, actor, "")
        target = decision.candidate.memory if decision.candidate is not None else None
        if decision.move is Move.MERGE and target is not None:
            group = [created, *changes.merge(memory, target, decision.reason, actor, now, cfg)]
            batch.add(group)
            return WriteOutcome(
                action=WriteAction.MERGED,
                memory=group[-1].memory,
                absorbed_into=target.id,
                merged_record=memory.id,
                reason=decision.reason,
                redactions=redactions,
            )
        if decision.move is Move.SUPERSEDE and target is not None:
            memory = memory.model_copy(update={"supersedes": target.id})
            why = f"supersedes {target.id} ({decision.reason})"
            old = changes.step(target, now, status=Status.SUPERSEDED, superseded_by=memory.id)
            batch.add(
                [
                    changes.record(memory, Action.CREATE, actor, why),
                    changes.record(
                        old,
                        Action.SUPERSEDE,
                        actor,
                        f"superseded by {memory.id} ({decision.reason})",
                    ),
                ]
            )
            batch.embedded.append((memory, row))
            return WriteOutcome(
                action=WriteAction.SUPERSEDED,
                memory=memory,
                superseded=target.id,
                reason=decision.reason,
                redactions=redactions,
            )
        batch.add([created])
        batch.embedded.append((memory, row))
        if decision.move is Move.REVIEW and target is not None:
            batch.reviews.append((at, memory, target, decision))
            return WriteOutcome(
                action=WriteAction.QUEUED,
                memory=memory,
                reason=decision.reason,
                redactions=redactions,
            )
        return WriteOutcome(action=WriteAction.CREATED, memory=memory, redactions=redactions)


def _checked(new: NewMemory) -> bool:
    """Facts go through dedup and contradiction unless the caller opted out."""
    return new.lifecycle and new.layer is Layer.FACT


def _rows(vectors: Vector | None, rows: list[int]) -> Vector | None:
    return None if vectors is None else vectors[rows]
