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
from engram.embeddings.protocol import in_process
from engram.lifecycle import changes
from engram.lifecycle.claims import lookup_terms
from engram.lifecycle.decide import Decision, Move, decide
from engram.lifecycle.dedup import Candidate, Fact, jaccard, word_set
from engram.lifecycle.index import CandidateIndex
from engram.lifecycle.report import WriteAction, WriteOutcome
from engram.models import Action, Layer, Memory, NewMemory, Status
from engram.scrub import Scrubber
from engram.scrub.sealed import create, scrub_new
from engram.service.fact_index import FactIndexes
from engram.service.lifecycle_ops import LifecycleOps
from engram.store import Change
from engram.store.protocol import Vector
from engram.trusted import construct


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
    reviews: list[tuple[int, Memory, Fact, Decision[Fact]]] = field(default_factory=list)
    words: dict[str, frozenset[str]] = field(default_factory=dict)
    """The word sets computed for the batch's texts, by text (the index reuses them)."""

    last: bool = False
    """The item being decided is the batch's last: no later item looks up what it writes."""

    def add(self, group: list[Change]) -> None:
        self.groups.append(group)
        for c in group:
            self.latest[c.memory.id] = c.memory
            if self.last:  # the commit puts its state in the index (or drops the index)
                continue
            self.pending.put(c.memory, self.words.get(c.memory.content))
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
        cleaned = [scrub_new(self._scrubber, item) for item in items]
        checked = [i for i, s in enumerate(cleaned) if _checked(s.value)]
        vectors = _Vectors(self._ops, [cleaned[i].value.content for i in checked])
        row_of = {item: row for row, item in enumerate(checked)}
        with self._indexes.lock:
            index = self._indexes.index(env_id, len(checked))
            before = self._indexes.stamp
            batch = _Batch(env_id, index)
            outcomes = []
            now = self._ops.clock()
            for i, scrubbed in enumerate(cleaned):
                batch.last = i == len(cleaned) - 1
                created = create(scrubbed, env_id, actor, now)  # the store writes it as is
                memory, redactions = created.memory, created.memory.redactions
                if i not in row_of:
                    batch.add([created])
                    outcomes.append(_created(memory))
                    continue
                row = row_of[i]
                decision = self._decide(batch, _Text.of(memory.content, batch), vectors, row)
                outcomes.append(self._apply(batch, i, created, decision, row, actor, redactions))
            flat = [c for group in batch.groups for c in group]
            # the vectors to store, embedded before the commit: a failing embedder stores nothing
            kept = vectors.rows([r for _, r in batch.embedded])
            try:
                self._ops.commit_groups(batch.groups, actor)
            except BaseException:
                self._indexes.failed()
                raise
            self._indexes.committed(before, flat, batch.words)
        self._ops.store_vectors([m for m, _ in batch.embedded], kept)
        for at, memory, target, decision in batch.reviews:
            similarity = decision.candidate.similarity if decision.candidate else 0.0
            item = self._ops.queue(memory, target, decision.reason, similarity)
            outcomes[at] = outcomes[at].model_copy(update={"review_id": item.id})
        return outcomes

    # -- one fact --------------------------------------------------------------------------
    def _decide(self, batch: _Batch, text: _Text, vectors: _Vectors, row: int) -> Decision[Fact]:
        """Keyword evidence first (the index's lookup or the store's keyword search); the
        nearest stored vectors only if it decides nothing, added to the same candidates."""
        cfg = self._ops.config
        keyword: Sequence[Candidate[Fact]]
        if batch.index is not None:
            keyword = batch.index.lookup(text.terms, text.words, cfg.keyword_candidates)
        else:
            keyword = self._ops.candidates(batch.env_id, text.text, None)
        pending = batch.pending.lookup(text.terms, text.words, cfg.keyword_candidates)
        decision = decide(text.text, _together(batch, keyword, [], pending), cfg)
        if decision.move in (Move.MERGE, Move.SUPERSEDE):
            return decision
        vector = vectors.get(row)
        if vector is None:
            return decision
        near = self._nearest(batch, text, vector)
        return decide(text.text, _together(batch, keyword, near, pending), cfg)

    def _nearest(self, batch: _Batch, text: _Text, vector: Vector) -> Sequence[Candidate[Fact]]:
        """The nearest stored facts, each with its cosine."""
        if batch.index is None:
            return self._ops.candidates(batch.env_id, text.text, vector, keyword=False)
        out: list[Candidate[Fact]] = []
        for memory_id, cosine in self._ops.nearest(batch.env_id, vector).items():
            entry = batch.index.get(memory_id)
            if entry is not None:
                out.append(Candidate(entry[0], jaccard(text.words, entry[1]), cosine))
        return out

    def _whole(self, fact: Fact) -> Memory | None:
        """The whole memory of a candidate the write acts on (the index holds only the text of
        facts it did not see written); None if it is no longer the active fact it was."""
        if isinstance(fact, Memory):
            return fact
        found = self._ops.store.get([fact.id])
        if not found or found[0].status is not Status.ACTIVE or found[0].content != fact.content:
            return None
        return found[0]

    def _apply(
        self,
        batch: _Batch,
        at: int,
        created: Change,
        decision: Decision[Fact],
        row: int,
        actor: Actor,
        redactions: dict[str, int],
    ) -> WriteOutcome:
        cfg, now = self._ops.config, self._ops.clock()
        memory = created.memory
        fact = decision.candidate.memory if decision.candidate is not None else None
        target = None
        if fact is not None and decision.move in (Move.MERGE, Move.SUPERSEDE):
            target = self._whole(fact)
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
        if (
            decision.move is Move.SUPERSEDE
            and target is not None
            # a time the caller gave (a write without one is said now, whatever a stored
            # fact's clock claims), before the stored fact's
            and memory.created_at != memory.recorded_at
            and memory.created_at < target.created_at
        ):
            # said before the fact it contradicts (a late delivery, an older export): history,
            # never a retirement of what was said since
            memory = memory.model_copy(
                update={"status": Status.SUPERSEDED, "superseded_by": target.id}
            )
            why = f"said before {target.id}, which replaces it ({decision.reason})"
            batch.add([changes.record(memory, Action.CREATE, actor, why)])
            batch.embedded.append((memory, row))
            return WriteOutcome(
                action=WriteAction.OUTDATED, memory=memory, reason=why, redactions=redactions
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
        if decision.move is Move.REVIEW and fact is not None:
            batch.reviews.append((at, memory, fact, decision))
            return WriteOutcome(
                action=WriteAction.QUEUED,
                memory=memory,
                reason=decision.reason,
                redactions=redactions,
            )
        return _created(memory)


@dataclass(frozen=True, slots=True)
class _Text:
    """A new fact's text with what its lookups need, computed once per write."""

    text: str
    words: frozenset[str]
    terms: frozenset[str]

    @classmethod
    def of(cls, text: str, batch: _Batch) -> _Text:
        words = batch.words.get(text)
        if words is None:
            words = batch.words[text] = word_set(text)
        return cls(text, words, word_set(lookup_terms(text)))


def _together(
    batch: _Batch,
    keyword: Sequence[Candidate[Fact]],
    near: Sequence[Candidate[Fact]],
    pending: Sequence[Candidate[Fact]],
) -> list[Candidate[Fact]]:
    """One candidate per fact: a nearest neighbour's (with its cosine) over a keyword hit;
    then the batch's own facts over anything the store or the index holds of them."""
    if not near and not pending and not batch.latest:  # one fact per keyword hit already
        return list(keyword)
    found = {c.memory.id: c for c in keyword}
    found.update((c.memory.id, c) for c in near)
    for memory_id in [i for i in found if i in batch.latest]:
        del found[memory_id]
    found.update((c.memory.id, c) for c in pending)
    return list(found.values())


def _created(memory: Memory) -> WriteOutcome:
    """The outcome of a memory stored as written (unvalidated: the memory's own values)."""
    values = {
        "action": WriteAction.CREATED,
        "memory": memory,
        "absorbed_into": None,
        "merged_record": None,
        "superseded": None,
        "review_id": None,
        "reason": "",
        "redactions": dict(memory.redactions),
    }
    return construct(WriteOutcome, values)


def _checked(new: NewMemory) -> bool:
    """Facts go through dedup and contradiction unless the caller opted out."""
    return new.lifecycle and new.layer is Layer.FACT


class _Vectors:
    """The vectors of a batch's checked texts, by row (None in keyword-only mode): embedded at
    once, before the write takes its lock — except a single write's with an in-process embedder
    (`embeddings.protocol.in_process`: the static model), embedded only when it needs one (a
    write that merges into a fact on keyword evidence never does), still before its commit."""

    def __init__(self, ops: LifecycleOps, texts: list[str]) -> None:
        self._ops, self._texts = ops, texts
        embedder = ops.embedder
        self._on = embedder is not None and bool(texts)
        lazy = embedder is not None and len(texts) == 1 and in_process(embedder)
        self._all = ops.embed(texts) if self._on and not lazy else None

    def get(self, row: int) -> Vector | None:
        if not self._on:
            return None
        if self._all is None:  # the single write's text (row 0), embedded now it is needed
            self._all = self._ops.embed(self._texts)
            assert self._all is not None  # an embedder is configured
        one: Vector = self._all[row]
        return one

    def rows(self, rows: list[int]) -> Vector | None:
        if not self._on or not rows:
            return None
        if self._all is None:
            self.get(rows[0])
        assert self._all is not None
        return self._all[rows]
