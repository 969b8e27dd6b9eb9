"""The lifecycle service: dedup and contradiction on write, the review queue, maintenance runs
(see :mod:`engram.service.maintenance`) and the undo of any lifecycle action.

Every change is a version with a reason, written with the other side of the same action in one
transaction, and recorded in the audit log.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.accounts import Role
from engram.actors import Actor
from engram.clock import Clock
from engram.embeddings.protocol import Embedder
from engram.errors import Conflict, InvalidInput, NotFound
from engram.lifecycle import changes
from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.report import MaintenanceReport, WriteOutcome
from engram.lifecycle.reviews import ReviewItem, ReviewStatus, stale_reason
from engram.limits import MAX_BULK
from engram.models import Action, Layer, Memory, MemoryFilter, NewMemory, Status
from engram.service.environments import EnvironmentService
from engram.service.fact_index import FactIndexes
from engram.service.lifecycle_ops import LifecycleOps
from engram.service.maintenance import Maintenance
from engram.service.memories import MemoryService
from engram.service.writes import WritePath
from engram.store import Change, Store

MAX_REVIEWS = 1000
EPISODE_CATEGORY = "episode"
"""The category of a conversation's summary (the extractors' episodes)."""


class LifecycleService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        memories: MemoryService,
        embedder: Embedder | None = None,
        config: LifecycleConfig | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self._memories = memories
        self._ops = LifecycleOps(store, clock, environments.audit, embedder, config)
        self._config = self._ops.config
        self._writes = WritePath(self._ops, memories.scrubber, FactIndexes(store))

    # -- write ---------------------------------------------------------------------------------
    def remember(
        self, new: NewMemory, actor: Actor, environment: str | None = None
    ) -> WriteOutcome:
        """Store a memory, applying dedup and contradiction rules to facts.

        A duplicate is merged into the existing fact (``absorbed_into``); a fact that clearly
        contradicts an older one supersedes it; an unclear difference is stored and queued for
        review. Episodes and procedures, and anything with ``lifecycle`` false, are stored as
        given.
        """
        return self.remember_many([new], actor, environment)[0]

    def remember_many(
        self, items: Sequence[NewMemory], actor: Actor, environment: str | None = None
    ) -> list[WriteOutcome]:
        """:meth:`remember` for a batch, in one transaction (all stored or none), one outcome
        per item in order; each fact sees the ones before it in the batch."""
        if len(items) > MAX_BULK:
            raise InvalidInput(f"at most {MAX_BULK} memories per request, got {len(items)}")
        env = self._envs.resolve(environment, actor, Role.WRITER)
        return self._writes.remember_many(env.id, items, actor)

    def episodes_of(self, environment_id: str, thread: str) -> list[Memory]:
        """The active summaries (episodes of the extraction's category) of one conversation."""
        flt = MemoryFilter(
            environment_ids=[environment_id],
            layers=[Layer.EPISODE],
            categories=[EPISODE_CATEGORY],
            threads=[thread],
        )
        return self._store.list_memories(flt, limit=50)

    def replace_episodes(
        self, newer: Memory, actor: Actor, older: Sequence[Memory] | None = None
    ) -> list[str]:
        """Earlier summaries of ``newer``'s conversation superseded by ``newer``, which
        summarises what they did and more: ``older`` (each still active), or with none given
        every active episode of its thread (``newer`` summarises the whole conversation so
        far). A conversation extracted again has one current summary of each part, not one
        per run. Their ids."""
        if newer.thread is None:
            return []
        held = self.episodes_of(newer.environment_id, newer.thread)
        if older is not None:
            wanted = {m.id for m in older}
            held = [m for m in held if m.id in wanted]
        older = [m for m in held if m.id != newer.id]
        if not older:
            return []
        now, why = self._clock(), "a later summary of the same conversation"
        batch = [
            changes.record(
                changes.step(m, now, status=Status.SUPERSEDED, superseded_by=newer.id),
                Action.SUPERSEDE,
                actor,
                f"superseded by {newer.id} ({why})",
            )
            for m in older
        ]
        latest = max(older, key=lambda m: (m.created_at, m.id))
        linked = changes.step(newer, now, supersedes=latest.id)
        batch.append(changes.record(linked, Action.SUPERSEDE, actor, f"supersedes {latest.id}"))
        self._ops.commit(batch, actor)
        return [m.id for m in older]

    # -- maintenance ---------------------------------------------------------------------------
    def maintain(
        self, actor: Actor, environment: str | None = None, *, dry_run: bool = False
    ) -> MaintenanceReport:
        """Sweep one environment (the default when none is named): merge duplicates, supersede
        contradicted facts, queue unclear pairs, flag decayed memories, compact cold episodes.
        With ``dry_run`` nothing is written; the report says what would change.

        One run per environment at a time across every process on the store: a second one
        raises :class:`Conflict` ("already running"). Each run is audited with its start and end.
        """
        env = self._envs.resolve(environment, actor, Role.WRITER)
        if dry_run:
            return Maintenance(self._ops, env, actor, dry_run=True).run()
        with self._store.run_exclusive(f"maintenance:{env.id}") as got:
            if not got:
                raise Conflict(
                    f"maintenance of {env.name!r} is already running", environment_id=env.id
                )
            started = self._clock()
            report = Maintenance(self._ops, env, actor, dry_run=False).run()
            self._envs.audit.record(
                actor,
                "maintenance.run",
                environment_id=env.id,
                started_at=started.isoformat(),
                finished_at=self._clock().isoformat(),
                scanned=report.scanned,
            )
        return report

    # -- review queue --------------------------------------------------------------------------
    def reviews(
        self,
        actor: Actor,
        environment: str | None = None,
        *,
        status: ReviewStatus | None = ReviewStatus.OPEN,
        limit: int = 100,
    ) -> list[ReviewItem]:
        if not 1 <= limit <= MAX_REVIEWS:
            raise InvalidInput(f"limit must be between 1 and {MAX_REVIEWS}, got {limit}")
        env = self._envs.resolve(environment, actor)
        statuses = [status] if status is not None else list(ReviewStatus)
        items = self._store.reviews.list_reviews([env.id], statuses, limit=limit)
        closed = {
            i.id: i for i in self._close_stale([i for i in items if i.status is ReviewStatus.OPEN])
        }
        items = [closed.get(i.id, i) for i in items]
        return [i for i in items if status is None or i.status is status]

    def _close_stale(self, items: Sequence[ReviewItem]) -> list[ReviewItem]:
        """Close open items with nothing left to decide (a memory of the pair is no longer
        active: superseded, merged or deleted since), saying why. Returns the closed ones."""
        ids = {x for i in items for x in (i.memory_id, i.other_id)}
        found = {m.id: m for m in self._store.get(list(ids))} if ids else {}
        out = []
        for item in items:
            why = stale_reason(item, found)
            if why is None:
                continue
            closed = item.model_copy(
                update={
                    "status": ReviewStatus.CLOSED,
                    "resolved_at": self._clock(),
                    "resolved_by": "lifecycle",
                    "reason": f"{item.reason}; closed: {why}",
                }
            )
            self._store.reviews.put_review(closed)
            out.append(closed)
        return out

    def resolve_review(
        self, review_id: str, actor: Actor, *, accept: bool, note: str = ""
    ) -> ReviewItem:
        """Accept (the newer memory supersedes the older) or dismiss (both stay) an item."""
        item = self._store.reviews.get_review(review_id)
        env = None if item is None else self._store.get_environment(item.environment_id)
        if item is None or env is None or self._envs.role_of(env, actor) is None:
            raise NotFound(f"review item {review_id!r} does not exist", review_id=review_id)
        self._envs.check(env, self._envs.role_of(env, actor), Role.WRITER, actor)
        if item.status is ReviewStatus.OPEN and self._close_stale([item]):
            item = self._store.reviews.get_review(review_id) or item
        if item.status is not ReviewStatus.OPEN:
            raise Conflict(
                f"review item {review_id!r} is already {item.status.value}"
                + (
                    f" ({item.reason.rsplit('closed: ', 1)[-1]})"
                    if item.status is ReviewStatus.CLOSED
                    else ""
                )
            )
        if accept:
            self._accept(item, actor, note)
        resolved = item.model_copy(
            update={
                "status": ReviewStatus.ACCEPTED if accept else ReviewStatus.DISMISSED,
                "resolved_at": self._clock(),
                "resolved_by": actor.label,
                "reason": f"{item.reason}; {note}" if note else item.reason,
            }
        )
        entry = self._envs.audit.entry(
            actor,
            f"review.{resolved.status.value}",
            environment_id=env.id,
            targets=[item.id, item.memory_id, item.other_id],
        )
        self._store.reviews.put_review(resolved, [entry])
        return resolved

    def _accept(self, item: ReviewItem, actor: Actor, note: str) -> None:
        found = {m.id: m for m in self._store.get([item.memory_id, item.other_id])}
        newer, older = found.get(item.memory_id), found.get(item.other_id)
        if newer is None or older is None:
            raise NotFound(f"a memory of review item {item.id!r} no longer exists")
        if newer.status is not Status.ACTIVE or older.status is not Status.ACTIVE:
            raise Conflict(
                f"review item {item.id!r}: both memories must be active to supersede "
                f"({newer.id} is {newer.status.value}, {older.id} is {older.status.value})"
            )
        why = f"review {item.id} accepted" + (f": {note}" if note else "")
        self._ops.commit(changes.supersede(older, newer, why, actor, self._clock()), actor)

    # -- undo ----------------------------------------------------------------------------------
    def undo(self, memory_id: str, actor: Actor) -> list[Memory]:
        """Undo the lifecycle action that last changed ``memory_id``, on both sides.

        - merged (give either side: the record, or the memory that absorbed it, whose newest
          merge still in effect is undone): the record is active again; the absorbing memory
          loses what the merge added (the reinforcement, the confidence step, an importance it
          raised, the record's tags);
        - superseded (give either side): the older is active again and the newer no longer
          links to it; both stay active;
        - flagged: active again;
        - archived by compaction: the episode is active again and the facts made from it are
          deleted (restorable).

        Returns every memory changed, the undone one first.
        """
        memory = self._memories.get(memory_id, actor, Role.WRITER)
        if memory.status is Status.ACTIVE and memory.supersedes:
            older = self._store.get([memory.supersedes])
            if older and older[0].superseded_by == memory.id:
                return self.undo(older[0].id, actor)
        if memory.status is Status.ACTIVE:
            absorbed = self._last_absorbed(memory)
            if absorbed is not None:
                return self.undo(absorbed, actor)
        if memory.status not in (Status.MERGED, Status.SUPERSEDED, Status.FLAGGED, Status.ARCHIVED):
            raise InvalidInput(
                f"memory {memory_id!r} is {memory.status.value}: no lifecycle action to undo"
            )
        restored = self._memories.restore(memory_id, actor, reason=f"undo {memory.status.value}")
        now = self._clock()
        batch: list[Change] = []
        if memory.status is Status.MERGED and memory.merged_into:
            for target in self._store.get([memory.merged_into]):
                versions = self._store.versions(target.id)
                undone = changes.unmerge(target, versions, memory.id, now)
                why = f"undo merge of {memory.id}"
                batch.append(changes.record(undone, Action.UPDATE, actor, why))
        elif memory.status is Status.SUPERSEDED and memory.superseded_by:
            for newer in self._store.get([memory.superseded_by]):
                if newer.supersedes == memory.id:
                    unlinked = changes.step(newer, now, supersedes=None)
                    why = f"undo: no longer supersedes {memory.id}"
                    batch.append(changes.record(unlinked, Action.UPDATE, actor, why))
        elif memory.status is Status.ARCHIVED:
            made = memory.metadata.get("compacted_into") or []
            for fact in self._store.get([str(i) for i in made]):
                if (
                    fact.status is Status.ACTIVE
                    and fact.metadata.get("compacted_from") == memory.id
                ):
                    gone = changes.step(fact, now, status=Status.DELETED)
                    why = f"undo compaction of {memory.id}"
                    batch.append(changes.record(gone, Action.DELETE, actor, why))
        self._ops.commit(batch, actor)
        return [restored, *(c.memory for c in batch)]

    def _last_absorbed(self, memory: Memory) -> str | None:
        """The record whose merge into ``memory`` is the newest still in effect, if any."""
        for v in reversed(self._store.versions(memory.id)):
            if v.action is not Action.MERGE or not v.reason.startswith(changes.ABSORBED):
                continue
            record_id = v.reason.removeprefix(changes.ABSORBED)
            found = self._store.get([record_id])
            if found and found[0].status is Status.MERGED and found[0].merged_into == memory.id:
                return record_id
        return None
