"""Captured sessions and observations on SQLite; observations are keyword-searchable through
an FTS5 index kept by triggers in the same transaction."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.store.capture import CapturedSession, Observation, SessionTouch
from engram.store.capture_columns import (
    OBSERVATION_COLUMNS,
    OBSERVATION_FIELDS,
    OBSERVATION_WRITE_FIELDS,
    SESSION_COLUMNS,
    SESSION_WRITE_FIELDS,
    CaptureRows,
    observation_values,
    session_values,
)

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


_UPSERT_SESSION = (
    f"INSERT INTO capture_sessions ({', '.join(SESSION_WRITE_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(SESSION_WRITE_FIELDS))}) "
    "ON CONFLICT (id) DO UPDATE SET started_at = min(started_at, excluded.started_at), "
    "last_event_at = max(last_event_at, excluded.last_event_at), "
    "ended_at = coalesce(excluded.ended_at, ended_at), "
    "cwd = CASE WHEN cwd = '' THEN excluded.cwd ELSE cwd END, "
    "title = CASE WHEN title = '' THEN excluded.title ELSE title END, "
    "user_id = CASE WHEN user_id = '' THEN excluded.user_id ELSE user_id END"
)
_INSERT_OBS = (
    f"INSERT INTO capture_observations ({', '.join(OBSERVATION_WRITE_FIELDS)}) "
    f"VALUES ({', '.join('?' * len(OBSERVATION_WRITE_FIELDS))}) ON CONFLICT (key) DO NOTHING"
)
_WORD = re.compile(r"\w+", re.UNICODE)


ROWS = CaptureRows(time=lambda value: datetime.fromtimestamp(value, UTC))
"""Capture rows to value objects: timestamps are stored as epoch seconds."""


def _epoch(value: datetime) -> float:
    return value.timestamp()


def _in(column: str, values: Sequence[str]) -> tuple[str, list[Any]]:
    if not values:
        return "", []
    return f" AND {column} IN ({','.join('?' * len(values))})", list(values)


class SQLiteCaptureStore:
    """Implements :class:`engram.store.capture.CaptureStore` on the store's database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def add_observations(
        self, sessions: Sequence[SessionTouch], observations: Sequence[Observation]
    ) -> list[str]:
        stored: list[str] = []
        counts: dict[str, int] = {}
        with self._db.tx() as conn:
            for s in sessions:
                conn.execute(_UPSERT_SESSION, session_values(s, _epoch))
            for o in observations:
                cur = conn.execute(_INSERT_OBS, observation_values(o, _epoch))
                if cur.rowcount == 1:
                    stored.append(o.key)
                    counts[o.session] = counts.get(o.session, 0) + 1
            conn.executemany(
                "UPDATE capture_sessions SET events = events + ? WHERE id = ?",
                [(n, sid) for sid, n in counts.items()],
            )
        return stored

    def get_session(self, session_id: str) -> CapturedSession | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE id = ?", (session_id,))
            .fetchone()
        )
        return ROWS.session(row) if row else None

    def list_sessions(
        self,
        environment_ids: Sequence[str],
        *,
        limit: int,
        agent: str | None = None,
        summarised: bool = False,
    ) -> list[CapturedSession]:
        cond, params = _in("environment_id", environment_ids)
        if agent:
            cond += " AND agent = ?"
            params.append(agent)
        if summarised:
            cond += " AND episode_id IS NOT NULL"
        rows = self._db.reader().execute(
            f"SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE 1 = 1{cond} "
            "ORDER BY last_event_at DESC, id LIMIT ?",
            [*params, limit],
        )
        return [ROWS.session(r) for r in rows.fetchall()]

    def observations(self, session_id: str, *, limit: int, after: int = 0) -> list[Observation]:
        rows = self._db.reader().execute(
            f"SELECT {OBSERVATION_COLUMNS} FROM capture_observations WHERE session = ? AND seq > ? "
            "ORDER BY at, seq LIMIT ?",
            (session_id, after, limit),
        )
        return [ROWS.observation(r) for r in rows.fetchall()]

    def search_observations(
        self, environment_ids: Sequence[str], query: str, *, limit: int
    ) -> list[Observation]:
        words = _WORD.findall(query)[:32]
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        cond, params = _in("o.environment_id", environment_ids)
        cols = ", ".join(f"o.{c}" for c in OBSERVATION_FIELDS)
        rows = self._db.reader().execute(
            f"SELECT {cols} FROM capture_fts JOIN capture_observations o ON o.seq = "
            f"capture_fts.rowid WHERE capture_fts MATCH ?{cond} "
            "ORDER BY bm25(capture_fts), o.seq LIMIT ?",
            [match, *params, limit],
        )
        return [ROWS.observation(r) for r in rows.fetchall()]

    def set_episode(self, session_id: str, episode_id: str, at: datetime) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE capture_sessions SET episode_id = ?, summarized_at = ? WHERE id = ?",
                (episode_id, at.timestamp(), session_id),
            )

    def unsummarized(self, idle_since: datetime, *, limit: int) -> list[CapturedSession]:
        rows = self._db.reader().execute(
            f"SELECT {SESSION_COLUMNS} FROM capture_sessions "
            "WHERE (summarized_at IS NULL OR summarized_at < last_event_at) "
            "AND last_event_at < ? ORDER BY last_event_at LIMIT ?",
            (idle_since.timestamp(), limit),
        )
        return [ROWS.session(r) for r in rows.fetchall()]

    def count_observations(self, environment_ids: Sequence[str]) -> int:
        cond, params = _in("environment_id", environment_ids)
        row = (
            self._db.reader()
            .execute(f"SELECT count(*) FROM capture_observations WHERE 1 = 1{cond}", params)
            .fetchone()
        )
        return int(row[0])
