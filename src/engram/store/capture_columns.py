"""The capture rows both stores share: the session and observation columns, the values an
insert writes, and one mapping from rows back to value objects, which differs between the
dialects only in how a timestamp is encoded and decoded (SQLite stores epoch seconds,
PostgreSQL aware datetimes). The memories' counterpart is :mod:`engram.store.columns`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from engram.store.capture import CapturedSession, Observation, SessionTouch
from engram.store.columns import TimedRows

SESSION_FIELDS = (
    "id",
    "environment_id",
    "agent",
    "session_id",
    "cwd",
    "started_at",
    "last_event_at",
    "events",
    "ended_at",
    "episode_id",
    "summarized_at",
    "title",
    "user_id",
)
"""The session columns, in the order both stores select them (:meth:`CaptureRows.session`)."""
SESSION_COLUMNS = ", ".join(SESSION_FIELDS)

SESSION_WRITE_FIELDS = (
    "id",
    "environment_id",
    "agent",
    "session_id",
    "cwd",
    "title",
    "started_at",
    "last_event_at",
    "ended_at",
    "user_id",
)
"""The columns a session upsert writes, in the order of :func:`session_values`."""

OBSERVATION_FIELDS = (
    "key",
    "session",
    "environment_id",
    "agent",
    "kind",
    "at",
    "hook",
    "text",
    "tool",
    "command",
    "files",
    "output",
    "failed",
    "detail",
    "seq",
)
"""The observation columns, in the order both stores select them; ``seq`` (last) is set by the
store, so an insert writes the others (:data:`OBSERVATION_WRITE_FIELDS`)."""
OBSERVATION_COLUMNS = ", ".join(OBSERVATION_FIELDS)
OBSERVATION_WRITE_FIELDS = OBSERVATION_FIELDS[:-1]


def session_values(s: SessionTouch, time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """A session upsert's values in :data:`SESSION_WRITE_FIELDS` order; ``time`` encodes a
    timestamp for the dialect."""
    ended = None if s.ended_at is None else time(s.ended_at)
    return (
        s.id,
        s.environment_id,
        s.agent,
        s.session_id,
        s.cwd,
        s.title,
        time(s.first_at),
        time(s.last_at),
        ended,
        s.user_id,
    )


def observation_values(o: Observation, time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """An observation insert's values in :data:`OBSERVATION_WRITE_FIELDS` order (``files`` as
    JSON text); ``time`` encodes a timestamp for the dialect."""
    return (
        o.key,
        o.session,
        o.environment_id,
        o.agent,
        o.kind,
        time(o.at),
        o.hook,
        o.text,
        o.tool,
        o.command,
        json.dumps(list(o.files)) if o.files else "[]",
        o.output,
        o.failed,
        o.detail,
    )


class CaptureRows(TimedRows):
    """Capture rows to value objects for one dialect."""

    def session(self, row: Sequence[Any]) -> CapturedSession:
        """A CapturedSession from a row in :data:`SESSION_FIELDS` order."""
        return CapturedSession(
            id=row[0],
            environment_id=row[1],
            agent=row[2],
            session_id=row[3],
            cwd=row[4],
            started_at=self._time(row[5]),
            last_event_at=self._time(row[6]),
            events=row[7],
            ended_at=self._maybe_time(row[8]),
            episode_id=row[9],
            summarized_at=self._maybe_time(row[10]),
            title=row[11],
            user_id=row[12],
        )

    def observation(self, row: Sequence[Any]) -> Observation:
        """An Observation from a row in :data:`OBSERVATION_FIELDS` order."""
        return Observation(
            key=row[0],
            session=row[1],
            environment_id=row[2],
            agent=row[3],
            kind=row[4],
            at=self._time(row[5]),
            hook=row[6],
            text=row[7],
            tool=row[8],
            command=row[9],
            files=tuple(json.loads(row[10])),
            output=row[11],
            failed=bool(row[12]),
            detail=row[13],
            seq=row[14],
        )
