"""The audit log: every mutation, who made it (user, key, interface), what and when.

Services describe a change with :meth:`AuditLog.entry` and hand the entry to the store with the
change: every mutating store method takes its audit entries and writes them in the change's
transaction, so the log never misses (or invents) a change. :meth:`AuditLog.record` appends an
entry on its own, for an event that is not one write (a maintenance run, made of many).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from engram.accounts import AuditEntry, AuditQuery, Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import PermissionDenied
from engram.ids import new_id
from engram.store import Store
from engram.trusted import construct

_OPTIONAL_TEXT = frozenset({str, type(None)})
_VERSION = frozenset({int, type(None)})


def _plain(values: dict[str, Any]) -> bool:
    """Whether ``values`` already hold exactly the types :class:`AuditEntry` declares (no
    details to copy, plain ints for versions), so that validating them would change nothing."""
    return (
        not values["details"]
        and type(values["at"]) is datetime
        and type(values["user_id"]) is str
        and type(values["interface"]) is str
        and type(values["action"]) is str
        and type(values["key_id"]) in _OPTIONAL_TEXT
        and type(values["environment_id"]) in _OPTIONAL_TEXT
        and all(type(t) is str for t in values["targets"])
        and all(
            type(k) is str and type(v) in _VERSION
            for d in (values["before"], values["after"])
            for k, v in d.items()
        )
    )


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
        values = {
            "id": new_id("aud_"),
            "at": self._clock(),
            "user_id": actor.user_id,
            "key_id": actor.key_id,
            "interface": actor.interface,
            "action": action,
            "environment_id": environment_id,
            "targets": list(dict.fromkeys(targets)),
            "before": dict(before or {}),
            "after": dict(after or {}),
            "details": details,
        }
        if _plain(values):  # a memory write's entry (every add has one): nothing to validate
            return construct(AuditEntry, values)
        return AuditEntry(**values)

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
