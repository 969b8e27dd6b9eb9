"""Memories of all three layers: create, read, update, soft delete, restore, history, purge.

Every change writes the memory's new state and an append-only version in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.accounts import Role
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import InvalidInput, NotFound, PermissionDenied
from engram.lifecycle.changes import record as record_change
from engram.lifecycle.changes import step as next_state
from engram.limits import MAX_BULK, MAX_PAGE
from engram.models import (
    ORDERS,
    Action,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryVersion,
    NewMemory,
    Page,
    Status,
)
from engram.scrub import Scrubber, scrub_value, sealed
from engram.service.environments import SCOPE_FOR, EnvironmentService, require_scope
from engram.service.threads import own_threads
from engram.store import Change, Store


class MemoryService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        scrubber: Scrubber | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self.scrubber = scrubber or Scrubber()

    # -- helpers -----------------------------------------------------------------------------
    def _load(
        self, memory_ids: Sequence[str], actor: Actor, need: Role = Role.READER
    ) -> list[Memory]:
        """The memories, in order. One in an environment the actor cannot see is NotFound; one
        they see without the key scope ``need`` implies (``read`` to read), or with too small a
        role, is PermissionDenied."""
        found = {m.id: m for m in self._store.get(memory_ids)}
        roles = self._envs.roles(actor)
        out = []
        for memory_id in memory_ids:
            memory = found.get(memory_id)
            role = None if memory is None else roles.get(memory.environment_id)
            if memory is None or role is None:
                raise NotFound(f"memory {memory_id!r} does not exist", memory_id=memory_id)
            require_scope(actor, SCOPE_FOR[need])
            if not role.allows(need):
                env = self._store.get_environment(memory.environment_id)
                if env is None:  # deleted concurrently
                    raise PermissionDenied(f"memory {memory_id!r} cannot be changed")
                self._envs.check(env, role, need, actor)
            out.append(memory)
        return out

    def _commit(self, changes: Sequence[Change], actor: Actor, action: str = "") -> None:
        """Write the changes and their audit entries in one transaction."""
        by_env: dict[str, list[Change]] = {}
        for c in changes:
            by_env.setdefault(c.memory.environment_id, []).append(c)
        entries = [
            self._envs.audit.entry(
                actor,
                action or f"memory.{group[0].version.action.value}",
                environment_id=env_id,
                targets=[c.memory.id for c in group],
                before={c.memory.id: (c.memory.version - 1) or None for c in group},
                after={c.memory.id: c.memory.version for c in group},
            )
            for env_id, group in by_env.items()
        ]
        self._store.write(changes, audit=entries)

    # -- create ------------------------------------------------------------------------------
    def add(self, new: NewMemory, actor: Actor, environment: str | None = None) -> Memory:
        return self.add_many([new], actor, environment)[0]

    def add_many(
        self, items: Sequence[NewMemory], actor: Actor, environment: str | None = None
    ) -> list[Memory]:
        """Create memories atomically: all are stored or none."""
        if len(items) > MAX_BULK:
            raise InvalidInput(f"at most {MAX_BULK} memories per request, got {len(items)}")
        env = self._envs.resolve(environment, actor, Role.WRITER)
        now = self._clock()
        # built from scrubbed input: the store writes them without scrubbing them again
        created = [
            sealed.create(sealed.scrub_new(self.scrubber, i), env.id, actor, now) for i in items
        ]
        self._commit(created, actor)
        return [c.memory for c in created]

    # -- read --------------------------------------------------------------------------------
    def get(self, memory_id: str, actor: Actor, need: Role = Role.READER) -> Memory:
        """One memory; ``need`` is the role (and so the key scope) of the caller's action, so a
        write path that looks a memory up first does not need the ``read`` scope."""
        return self._load([memory_id], actor, need)[0]

    def list_memories(
        self,
        actor: Actor,
        flt: MemoryFilter | None = None,
        *,
        environment: str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "-updated_at",
    ) -> Page:
        """Memories matching ``flt`` in one environment (the default when none is named)."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
        if offset < 0:
            raise InvalidInput(f"offset must not be negative, got {offset}")
        if order not in ORDERS:
            raise InvalidInput(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        env = self._envs.resolve(environment, actor)
        flt = (flt or MemoryFilter()).model_copy(update={"environment_ids": [env.id]})
        flt = own_threads(flt, actor, self._store.conversations)
        items = self._store.list_memories(flt, limit=limit, offset=offset, order=order)
        return Page(items=items, total=self._store.count(flt), limit=limit, offset=offset)

    def history(self, memory_id: str, actor: Actor) -> list[MemoryVersion]:
        self.get(memory_id, actor)
        return self._store.versions(memory_id)

    # -- update ------------------------------------------------------------------------------
    def update(self, memory_id: str, patch: MemoryPatch, actor: Actor, reason: str = "") -> Memory:
        return self.update_many([(memory_id, patch)], actor, reason)[0]

    def update_many(
        self, patches: Sequence[tuple[str, MemoryPatch]], actor: Actor, reason: str = ""
    ) -> list[Memory]:
        if len(patches) > MAX_BULK:
            raise InvalidInput(f"at most {MAX_BULK} updates per request, got {len(patches)}")
        current = self._load([p[0] for p in patches], actor, Role.WRITER)
        changes = []
        out: list[Memory] = []
        for memory, (_, patch) in zip(current, patches, strict=True):
            if memory.status is Status.DELETED:
                raise InvalidInput(
                    f"memory {memory.id!r} is deleted; restore it before editing",
                    memory_id=memory.id,
                )
            patch, found = scrub_value(self.scrubber, patch)
            updates = {**patch.changes(), "redactions": found.as_dict()}
            if memory.layer is not Layer.PROCEDURE and "procedure" in updates:
                raise InvalidInput(f"memory {memory.id!r} is a {memory.layer}, not a procedure")
            if memory.layer is not Layer.EPISODE and "episode" in updates:
                raise InvalidInput(f"memory {memory.id!r} is a {memory.layer}, not an episode")
            if all(getattr(memory, k) == v for k, v in updates.items() if k != "redactions"):
                out.append(memory)  # nothing changes (an empty patch, or the same values)
                continue
            change = record_change(
                next_state(memory, self._clock(), **updates), Action.UPDATE, actor, reason
            )
            changes.append(change)
            out.append(change.memory)
        if changes:
            self._commit(changes, actor)
        return out

    def record_outcome(
        self, memory_id: str, actor: Actor, *, success: bool, note: str = ""
    ) -> Memory:
        """Count a run of a procedure as a success or a failure."""
        memory = self._load([memory_id], actor, Role.WRITER)[0]
        if memory.procedure is None:
            raise InvalidInput(f"memory {memory_id!r} is a {memory.layer}, not a procedure")
        proc = memory.procedure
        now = self._clock()
        proc = proc.model_copy(
            update={
                "success_count": proc.success_count + int(success),
                "failure_count": proc.failure_count + int(not success),
                "last_outcome_at": now,
            }
        )
        new = next_state(memory, self._clock(), procedure=proc)
        reason = ("success" if success else "failure") + (f": {note}" if note else "")
        outcome = "memory.success" if success else "memory.failure"
        self._commit([record_change(new, Action.UPDATE, actor, reason)], actor, outcome)
        return new

    # -- delete / restore / purge -------------------------------------------------------------
    def delete(self, memory_id: str, actor: Actor, reason: str = "") -> Memory:
        """Soft delete one memory and return it; one already deleted is returned as it is
        (deleting twice changes nothing)."""
        deleted = self.delete_many([memory_id], actor, reason)
        return deleted[0] if deleted else self._load([memory_id], actor, Role.WRITER)[0]

    def delete_many(
        self, memory_ids: Sequence[str], actor: Actor, reason: str = ""
    ) -> list[Memory]:
        """Soft delete: the memory leaves search and listings but can be restored."""
        if len(memory_ids) > MAX_BULK:
            raise InvalidInput(f"at most {MAX_BULK} deletions per request, got {len(memory_ids)}")
        changes = [
            record_change(
                next_state(m, self._clock(), status=Status.DELETED), Action.DELETE, actor, reason
            )
            for m in self._load(memory_ids, actor, Role.WRITER)
            if m.status is not Status.DELETED
        ]
        self._commit(changes, actor)
        return [c.memory for c in changes]

    def restore(
        self, memory_id: str, actor: Actor, version: int | None = None, reason: str = ""
    ) -> Memory:
        """Bring back an earlier state as a new version.

        With ``version``, the memory's content and attributes return to that version's
        snapshot; without it, a deleted (or merged, superseded, flagged, archived) memory returns
        to the last state in which it was active.
        """
        memory = self._load([memory_id], actor, Role.WRITER)[0]
        versions = self._store.versions(memory_id)
        if version is None:
            target = next(
                (v for v in reversed(versions) if v.snapshot.status is Status.ACTIVE), None
            )
            if memory.status is Status.ACTIVE:
                raise InvalidInput(f"memory {memory_id!r} is already active; name a version")
            if target is None:
                raise NotFound(f"memory {memory_id!r} has no active version to restore")
        else:
            target = next((v for v in versions if v.version == version), None)
            if target is None:
                raise NotFound(
                    f"memory {memory_id!r} has no version {version} (it has 1-{memory.version})",
                    memory_id=memory_id,
                    version=version,
                )
        snap = target.snapshot
        restored = snap.model_copy(
            update={
                # usage counters are facts about the present, not part of the restored state
                "access_count": memory.access_count,
                "last_accessed_at": memory.last_accessed_at,
                "reinforcement_count": memory.reinforcement_count,
                "version": memory.version + 1,
                "updated_at": self._clock(),
                "redactions": {},
            }
        )
        why = reason or f"restored version {target.version}"
        self._commit([record_change(restored, Action.RESTORE, actor, why)], actor)
        return restored

    def purge(self, memory_ids: Sequence[str], actor: Actor) -> int:
        """Remove memories for good: rows, versions, keyword index entries and vectors."""
        memories = self._load(memory_ids, actor, Role.OWNER)
        entries = []
        for env_id in dict.fromkeys(m.environment_id for m in memories):
            ids = [m.id for m in memories if m.environment_id == env_id]
            entries.append(
                self._envs.audit.entry(
                    actor,
                    "memory.purge",
                    environment_id=env_id,
                    targets=ids,
                    before={m.id: m.version for m in memories if m.environment_id == env_id},
                    after=dict.fromkeys(ids),
                )
            )
        return self._store.purge(memory_ids, entries)
