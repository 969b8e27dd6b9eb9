"""The handoff table's SQL, written once for both backends (``?`` placeholders; PostgreSQL's
store swaps them for ``%s``), and the row <-> :class:`Handoff` conversions around it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from engram.handoffs import Claim, Handoff, HandoffState

COLS = (
    "id, owner, environment_id, summary, from_agent, created_at, cwd, open_questions, "
    "next_steps, files_touched, for_agent, for_user, automatic, source_session, state, "
    "updated_at, accepted_by, accepted_agent, accepted_session, accepted_at"
)
_N = len(COLS.split(","))
INSERT = f"INSERT INTO handoffs ({COLS}) VALUES ({', '.join('?' * _N)})"
UPSERT_AUTOMATIC = (
    f"{INSERT} ON CONFLICT (id) DO UPDATE SET summary = excluded.summary, "
    "open_questions = excluded.open_questions, next_steps = excluded.next_steps, "
    "files_touched = excluded.files_touched, cwd = excluded.cwd, "
    "updated_at = excluded.updated_at, "
    # a session that went on working after its handoff expired (a newer session in its
    # directory ended first, or it was left for days) leaves it again, as of now
    "created_at = CASE WHEN handoffs.state = 'expired' THEN excluded.created_at "
    "ELSE handoffs.created_at END, state = 'open' "
    "WHERE handoffs.state = 'open' OR (handoffs.state = 'expired' "
    "AND excluded.summary <> handoffs.summary) "
    f"RETURNING {COLS}"
)
GET = f"SELECT {COLS} FROM handoffs WHERE id = ?"
ACCEPT = (
    "UPDATE handoffs SET state = 'accepted', accepted_by = ?, accepted_agent = ?, "
    "accepted_session = ?, accepted_at = ?, updated_at = ? WHERE id = ? AND state = 'open' "
    f"RETURNING {COLS}"
)
SET_STATE = (
    f"UPDATE handoffs SET state = ?, updated_at = ? WHERE id = ? AND state = ? RETURNING {COLS}"
)
RELEASE = (
    "UPDATE handoffs SET state = 'open', accepted_by = NULL, accepted_agent = NULL, "
    "accepted_session = NULL, accepted_at = NULL, updated_at = ? "
    "WHERE id = ? AND state = 'accepted' AND accepted_session = ?"
)
BY_SESSION = f"SELECT {COLS} FROM handoffs WHERE accepted_session = ? AND state = 'accepted'"
EXPIRE_OLDER = (
    "UPDATE handoffs SET state = 'expired', updated_at = ? WHERE state = 'open' AND automatic "
    "AND owner = ? AND environment_id = ? AND cwd = ? AND created_at < ?"
)
EXPIRE_STALE = (
    "UPDATE handoffs SET state = 'expired', updated_at = ? WHERE state = 'open' AND created_at < ?"
)


def list_query(
    visible_to: str | None,
    environment_ids: Sequence[str],
    states: Sequence[HandoffState],
    limit: int,
    for_taking: bool = False,
) -> tuple[str, list[Any]]:
    cond: list[str] = []
    params: list[Any] = []
    if visible_to is not None and for_taking:  # theirs to take: not one left for a teammate
        cond.append("(for_user = ? OR (owner = ? AND for_user IS NULL))")
        params += [visible_to, visible_to]
    elif visible_to is not None:
        cond.append("(owner = ? OR for_user = ?)")
        params += [visible_to, visible_to]
    if environment_ids:
        cond.append(f"environment_id IN ({', '.join('?' * len(environment_ids))})")
        params += list(environment_ids)
    if states:
        cond.append(f"state IN ({', '.join('?' * len(states))})")
        params += [s.value for s in states]
    where = " AND ".join(cond) or "1 = 1"
    sql = f"SELECT {COLS} FROM handoffs WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?"
    return sql, [*params, limit]


def to_params(h: Handoff, ts: Callable[[datetime | None], Any]) -> tuple[Any, ...]:
    return (
        h.id,
        h.owner,
        h.environment_id,
        h.summary,
        h.from_agent,
        ts(h.created_at),
        h.cwd,
        json.dumps(h.open_questions),
        json.dumps(h.next_steps),
        json.dumps(h.files_touched),
        h.for_agent,
        h.for_user,
        h.automatic,
        h.source_session,
        h.state.value,
        ts(h.updated_at),
        h.accepted_by,
        h.accepted_agent,
        h.accepted_session,
        ts(h.accepted_at),
    )


def from_row(row: Sequence[Any], ts: Callable[[Any], datetime | None]) -> Handoff:
    created = ts(row[5])
    assert created is not None
    return Handoff(
        id=row[0],
        owner=row[1],
        environment_id=row[2],
        summary=row[3],
        from_agent=row[4],
        created_at=created,
        cwd=row[6],
        open_questions=json.loads(row[7]),
        next_steps=json.loads(row[8]),
        files_touched=json.loads(row[9]),
        for_agent=row[10],
        for_user=row[11],
        automatic=bool(row[12]),
        source_session=row[13],
        state=HandoffState(row[14]),
        updated_at=ts(row[15]),
        accepted_by=row[16],
        accepted_agent=row[17],
        accepted_session=row[18],
        accepted_at=ts(row[19]),
    )


class SQLHandoffStore:
    """:class:`engram.store.handoffs.HandoffStore` over any SQL backend: a subclass says how
    to run a statement (``_write`` in its own transaction, ``_read``) and how timestamps are
    stored."""

    def _write(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        raise NotImplementedError

    def _read(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        raise NotImplementedError

    def _count(self, sql: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    def _ts_in(self, value: datetime | None) -> Any:
        raise NotImplementedError

    def _ts_out(self, value: Any) -> datetime | None:
        raise NotImplementedError

    def _one(self, rows: list[Sequence[Any]]) -> Handoff | None:
        return from_row(rows[0], self._ts_out) if rows else None

    def add(self, handoff: Handoff) -> None:
        self._write(INSERT, to_params(handoff, self._ts_in))

    def upsert_automatic(self, handoff: Handoff) -> Handoff:
        found = self._one(self._write(UPSERT_AUTOMATIC, to_params(handoff, self._ts_in)))
        if found is None:  # already accepted, expired or cancelled: left as it is
            found = self.get(handoff.id)
        assert found is not None
        return found

    def get(self, handoff_id: str) -> Handoff | None:
        return self._one(self._read(GET, (handoff_id,)))

    def find(
        self,
        *,
        visible_to: str | None,
        environment_ids: Sequence[str] = (),
        states: Sequence[HandoffState] = (),
        limit: int,
        for_taking: bool = False,
    ) -> list[Handoff]:
        sql, params = list_query(visible_to, environment_ids, states, limit, for_taking)
        return [from_row(r, self._ts_out) for r in self._read(sql, params)]

    def accept(self, handoff_id: str, claim: Claim) -> Handoff | None:
        at = self._ts_in(claim.at)
        params = (claim.user_id, claim.agent, claim.session, at, at, handoff_id)
        return self._one(self._write(ACCEPT, params))

    def set_state(
        self, handoff_id: str, from_state: HandoffState, to_state: HandoffState, at: datetime
    ) -> Handoff | None:
        params = (to_state.value, self._ts_in(at), handoff_id, from_state.value)
        return self._one(self._write(SET_STATE, params))

    def release(self, handoff_id: str, session: str, at: datetime) -> bool:
        return self._count(RELEASE, (self._ts_in(at), handoff_id, session)) == 1

    def accepted_by_session(self, session: str) -> list[Handoff]:
        return [from_row(r, self._ts_out) for r in self._read(BY_SESSION, (session,))]

    def expire_older_automatic(
        self, owner: str, environment_id: str, cwd: str, before: datetime, at: datetime
    ) -> int:
        params = (self._ts_in(at), owner, environment_id, cwd, self._ts_in(before))
        return self._count(EXPIRE_OLDER, params)

    def expire_stale(self, created_before: datetime, at: datetime) -> int:
        return self._count(EXPIRE_STALE, (self._ts_in(at), self._ts_in(created_before)))
