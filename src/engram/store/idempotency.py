"""The storage seam for idempotent requests (``Idempotency-Key``): a narrow protocol, the
request in flight, and the factory that finds the implementation matching a memory store.

A request with a key is first *reserved*: a row (user, key, fingerprint of the request, owner
process) committed before the request runs, so that a concurrent duplicate finds it and does
not run too. Every write transaction the request commits sets the row's ``executed`` flag *in
the same transaction* (the stores read :data:`CURRENT`), so that after a crash a retry knows
whether the first attempt changed anything: not executed, it runs again; executed, it is never
repeated. When the request ends its answer (status, content type, body) is kept in the row and
a repeat gets it back; rows older than the retention (24 h) are pruned.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol


@dataclass(eq=False)
class InFlight:
    """The reserved request running in this context; ``wrote`` once a write has committed
    (or tried to) with the mark."""

    user_id: str
    key: str
    owner: str
    wrote: bool = False


TABLE = "idempotency_keys"

CURRENT: ContextVar[InFlight | None] = ContextVar("engram_idempotent_request", default=None)
"""Set by the REST edge around a reserved request; write transactions mark its row."""


@dataclass(frozen=True)
class Reservation:
    """A stored key: the request it was first used for, and its answer once there is one."""

    fingerprint: str
    owner: str
    created_at: datetime
    executed: bool
    status: int | None = None
    content_type: str | None = None
    body: bytes | None = None

    @property
    def answered(self) -> bool:
        return self.status is not None


class IdempotencyStore(Protocol):
    def reserve(
        self, user_id: str, key: str, fingerprint: str, owner: str, now: datetime, stale: datetime
    ) -> Reservation | None:
        """Reserve ``key`` for ``user_id`` (dropping a row of it created before ``stale``):
        None if reserved now, else the row that holds it."""
        ...

    def take_over(self, user_id: str, key: str, old_owner: str, new_owner: str) -> bool:
        """Move an unanswered, unexecuted reservation from a dead owner to ``new_owner``;
        False if it is no longer in that state."""
        ...

    def answer(
        self, user_id: str, key: str, owner: str, status: int, content_type: str, body: bytes
    ) -> None:
        """Keep the answer of the request ``owner`` ran."""
        ...

    def release(self, user_id: str, key: str, owner: str) -> None:
        """Drop an unanswered reservation (the request changed nothing and may run again)."""
        ...

    def prune(self, before: datetime) -> int:
        """Delete the rows created before ``before``; how many."""
        ...


class _Executes(Protocol):
    def execute(self, sql: Any, params: Any = ..., /) -> Any: ...


class SQLIdempotencyStore:
    """:class:`IdempotencyStore` in the SQL both backends share: a subclass names its
    placeholder, its write transaction and how it stores a time."""

    placeholder = "?"

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _time(self, at: datetime) -> object:
        return at

    def _read_time(self, value: Any) -> datetime:
        assert isinstance(value, datetime)
        return value

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)

    def _run(self, sql: str, params: Sequence[object]) -> int:
        with self._tx() as conn:
            return int(conn.execute(self._sql(sql), params).rowcount)

    def reserve(
        self, user_id: str, key: str, fingerprint: str, owner: str, now: datetime, stale: datetime
    ) -> Reservation | None:
        with self._tx() as conn:
            conn.execute(
                self._sql(f"DELETE FROM {TABLE} WHERE user_id = ? AND key = ? AND created_at < ?"),
                (user_id, key, self._time(stale)),
            )
            inserted = conn.execute(
                self._sql(
                    f"INSERT INTO {TABLE} (user_id, key, fingerprint, owner, created_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
                ),
                (user_id, key, fingerprint, owner, self._time(now)),
            ).rowcount
            if inserted == 1:
                return None
            row = conn.execute(
                self._sql(
                    "SELECT fingerprint, owner, created_at, executed, status, content_type, body "
                    f"FROM {TABLE} WHERE user_id = ? AND key = ?"
                ),
                (user_id, key),
            ).fetchone()
        assert row is not None  # it made the INSERT do nothing; rows go only when stale
        return Reservation(
            fingerprint=row[0],
            owner=row[1],
            created_at=self._read_time(row[2]),
            executed=bool(row[3]),
            status=row[4],
            content_type=row[5],
            body=None if row[6] is None else bytes(row[6]),
        )

    def take_over(self, user_id: str, key: str, old_owner: str, new_owner: str) -> bool:
        sql = (
            f"UPDATE {TABLE} SET owner = ? WHERE user_id = ? AND key = ? AND owner = ? "
            "AND status IS NULL AND executed = 0"
        )
        return self._run(sql, (new_owner, user_id, key, old_owner)) == 1

    def answer(
        self, user_id: str, key: str, owner: str, status: int, content_type: str, body: bytes
    ) -> None:
        sql = (
            f"UPDATE {TABLE} SET status = ?, content_type = ?, body = ? "
            "WHERE user_id = ? AND key = ? AND owner = ?"
        )
        self._run(sql, (status, content_type, body, user_id, key, owner))

    def release(self, user_id: str, key: str, owner: str) -> None:
        sql = f"DELETE FROM {TABLE} WHERE user_id = ? AND key = ? AND owner = ? AND status IS NULL"
        self._run(sql, (user_id, key, owner))

    def prune(self, before: datetime) -> int:
        return self._run(f"DELETE FROM {TABLE} WHERE created_at < ?", (self._time(before),))


def mark_executed(conn: _Executes, inflight: InFlight | None, placeholder: str) -> None:
    """In a write transaction (the stores call it before each commit): the reserved request in
    flight has changed something."""
    if inflight is None:
        return
    p = placeholder
    conn.execute(
        f"UPDATE {TABLE} SET executed = 1 WHERE user_id = {p} AND key = {p} AND owner = {p}",
        (inflight.user_id, inflight.key, inflight.owner),
    )
    inflight.wrote = True
