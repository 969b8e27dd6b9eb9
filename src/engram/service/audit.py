"""The audit log: every mutation, who made it (user, key, interface), what and when.

Services describe a change with :meth:`AuditLog.entry` and hand the entry to the store with the
change: every mutating store method takes its audit entries and writes them in the change's
transaction, so the log never misses (or invents) a change. :meth:`AuditLog.record` appends an
entry on its own, for an event that is not one write (a maintenance run, made of many).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engram.accounts import AuditEntry, AuditQuery, Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import PermissionDenied
from engram.ids import new_id
from engram.store import Store


class AuditLog:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def entry(
        self,
        actor: Actor,
        action: str,
        *,
        environment_id: str | None = None,
        targets: Iterable[str] = (),
        before: Mapping[str, int | None] | None = None,
        after: Mapping[str, int | None] | None = None,
        **details: Any,
    ) -> AuditEntry:
        return AuditEntry(
            id=new_id("aud_"),
            at=self._clock(),
            user_id=actor.user_id,
            key_id=actor.key_id,
            interface=actor.interface,
            action=action,
            environment_id=environment_id,
            targets=list(dict.fromkeys(targets)),
            before=dict(before or {}),
            after=dict(after or {}),
            details=details,
        )

    def record(self, actor: Actor, action: str, **kwargs: Any) -> AuditEntry:
        """Append one entry on its own (an event, such as a maintenance run, that spans many
        transactions, each audited with its changes)."""
        entry = self.entry(actor, action, **kwargs)
        self._store.audit.append([entry])
        return entry

    def query(self, q: AuditQuery, actor: Actor) -> list[AuditEntry]:
        """Entries matching ``q``, newest first. Without the admin scope an actor sees only their
        own entries. Reading the log needs the ``read`` scope."""
        if not actor.can(Scope.READ):
            raise PermissionDenied("this key lacks the 'read' scope", scope=Scope.READ.value)
        if not actor.can(Scope.ADMIN):
            q = q.model_copy(update={"user_id": actor.user_id})
        return self._store.audit.query(q)
