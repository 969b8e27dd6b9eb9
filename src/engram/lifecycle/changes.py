"""The versions each lifecycle action writes. Pure functions: the service commits the changes
they return in one transaction, so both sides of a merge or supersede move together.

A reason names the other memory by id, never by its text: a purge removes a memory's versions,
and its words must not live on in the history of the memory that absorbed it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.actors import Actor
from engram.ids import new_id
from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.dedup import merged_confidence
from engram.models import Action, Memory, MemoryVersion, NewMemory, Status
from engram.store import Change
from engram.trusted import construct


def record(memory: Memory, action: Action, actor: Actor, reason: str = "") -> Change:
    """A memory's new state with the version that records it (built unvalidated: every value
    is the valid memory's own, or typed here)."""
    version = {
        "memory_id": memory.id,
        "version": memory.version,
        "action": action,
        "at": memory.updated_at,
        "actor": actor.label,
        "reason": reason,
        "snapshot": memory,
    }
    return Change(memory, construct(MemoryVersion, version))


def step(memory: Memory, now: datetime, **updates: Any) -> Memory:
    """The memory's next state (``redactions`` counts only what this step's own input had)."""
    return memory.model_copy(
        update={"redactions": {}, **updates, "version": memory.version + 1, "updated_at": now}
    )


_NOT_COPIED = ("created_at", "author", "lifecycle")


def build(env_id: str, new: NewMemory, actor: Actor, now: datetime, **updates: Any) -> Memory:
    """A new memory (version 1) from what a caller supplied."""
    created = new.created_at or now
    # a model's __dict__ holds its fields (no extras: NewMemory forbids them)
    fields = {k: v for k, v in new.__dict__.items() if k not in _NOT_COPIED}
    fields.update(updates)
    fields.update(
        id=new_id("mem_"),
        environment_id=env_id,
        created_at=created,
        # an imported memory keeps its own time: recency is about when it was true
        updated_at=created,
        # and the lifecycle counts how long it lay untouched from when it was stored
        recorded_at=now,
        author=new.author or actor.user_id,
        version=1,
    )
    if updates.keys() <= _TRUSTED_UPDATES and isinstance(updates.get("redactions", {}), dict):
        # the validated input's own values, and fields typed here: unvalidated, with the
        # defaults of what a new memory does not say (a copy of each mutable one)
        fields.update(_NEW_DEFAULTS, tags=list(new.tags), metadata=dict(new.metadata))
        fields.setdefault("redactions", {})
        return construct(Memory, {name: fields[name] for name in Memory.model_fields})
    return Memory(**fields)


_TRUSTED_UPDATES = frozenset({"redactions"})
_NEW_DEFAULTS: dict[str, Any] = {
    "status": Status.ACTIVE,
    "supersedes": None,
    "superseded_by": None,
    "merged_into": None,
    "last_accessed_at": None,
    "access_count": 0,
    "reinforcement_count": 0,
}
"""What a new memory holds of the fields a caller does not supply."""


def merge(
    duplicate: Memory,
    target: Memory,
    why: str,
    actor: Actor,
    now: datetime,
    cfg: LifecycleConfig,
) -> list[Change]:
    """``duplicate`` is absorbed by ``target``: it keeps its wording as a record with status
    merged (restorable); the target is reinforced (confidence up, count + 1)."""
    gone = step(duplicate, now, status=Status.MERGED, merged_into=target.id)
    kept = step(
        target,
        now,
        confidence=merged_confidence(target.confidence, duplicate.confidence, cfg),
        importance=max(target.importance, duplicate.importance),
        reinforcement_count=target.reinforcement_count + 1,
        tags=list(dict.fromkeys([*target.tags, *duplicate.tags])),
    )
    return [
        record(gone, Action.MERGE, actor, f"merged into {target.id} ({why})"),
        record(kept, Action.MERGE, actor, f"{ABSORBED}{duplicate.id}"),
    ]


ABSORBED = "absorbed "
"""How the absorbing memory's merge version names the record it absorbed."""


def unmerge(
    target: Memory, versions: Sequence[MemoryVersion], record_id: str, now: datetime
) -> Memory:
    """``target`` without what absorbing ``record_id`` added to it (from its versions): the
    reinforcement, the confidence step, a raised importance (unless changed since) and the
    tags the record brought (unless the target had them before)."""
    by_number = {v.version: v.snapshot for v in versions}
    at = next(
        (
            v
            for v in reversed(versions)
            if v.action is Action.MERGE and v.reason == ABSORBED + record_id
        ),
        None,
    )
    before = by_number.get(at.version - 1) if at is not None else None
    if at is None or before is None:  # history not found: the count alone, as before
        return step(target, now, reinforcement_count=max(0, target.reinforcement_count - 1))
    after = at.snapshot
    gained = after.confidence - before.confidence
    raised = after.importance > before.importance and target.importance == after.importance
    added = set(after.tags) - set(before.tags)
    return step(
        target,
        now,
        reinforcement_count=max(0, target.reinforcement_count - 1),
        confidence=round(min(1.0, max(0.0, target.confidence - gained)), 4),
        importance=before.importance if raised else target.importance,
        tags=[t for t in target.tags if t not in added],
    )


def supersede(older: Memory, newer: Memory, why: str, actor: Actor, now: datetime) -> list[Change]:
    """``newer`` takes the place of ``older``, linked both ways."""
    old = step(older, now, status=Status.SUPERSEDED, superseded_by=newer.id)
    new = step(newer, now, supersedes=older.id)
    return [
        record(old, Action.SUPERSEDE, actor, f"superseded by {newer.id} ({why})"),
        record(new, Action.SUPERSEDE, actor, f"supersedes {older.id}"),
    ]


def flag(memory: Memory, why: str, actor: Actor, now: datetime) -> Change:
    return record(step(memory, now, status=Status.FLAGGED), Action.FLAG, actor, why)


def archive(episode: Memory, fact_ids: list[str], actor: Actor, now: datetime) -> Change:
    metadata = {**episode.metadata, "compacted_into": fact_ids}
    archived = step(episode, now, status=Status.ARCHIVED, metadata=metadata)
    return record(
        archived, Action.ARCHIVE, actor, f"compacted into {len(fact_ids)} facts: {fact_ids}"
    )
