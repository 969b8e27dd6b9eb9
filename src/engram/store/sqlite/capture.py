"""Captured sessions and observations on SQLite; observations are keyword-searchable through
an FTS5 index kept by triggers in the same transaction."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.store.capture import CapturedSession, Observation, SessionTouch

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


_SESSION_COLS = (
    "id, environment_id, agent, session_id, cwd, started_at, last_event_at, events, ended_at, "
    "episode_id, summarized_at, title, user_id"
)
_OBS_COLS = (
    "key, session, environment_id, agent, kind, at, hook, text, tool, command, files, output, "
    "failed, detail, seq"
)
_UPSERT_SESSION = (
    "INSERT INTO capture_sessions (id, environment_id, agent, session_id, cwd, title, "
    "started_at, last_event_at, ended_at, user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET started_at = min(started_at, excluded.started_at), "
    "last_event_at = max(last_event_at, excluded.last_event_at), "
    "ended_at = coalesce(excluded.ended_at, ended_at), "
    "cwd = CASE WHEN cwd = '' THEN excluded.cwd ELSE cwd END, "
    "title = CASE WHEN title = '' THEN excluded.title ELSE title END, "
    "user_id = CASE WHEN user_id = '' THEN excluded.user_id ELSE user_id END"
)
_INSERT_OBS = (
    "INSERT INTO capture_observations (key, session, environment_id, agent, kind, at, hook, "
    "text, tool, command, files, output, failed, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING"
)
_WORD = re.compile(r"\w+", re.UNICODE)


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _session(row: Sequence[Any]) -> CapturedSession:
    return CapturedSession(
        id=row[0],
        environment_id=row[1],
        agent=row[2],
        session_id=row[3],
        cwd=row[4],
        started_at=datetime.fromtimestamp(row[5], UTC),
        last_event_at=datetime.fromtimestamp(row[6], UTC),
        events=row[7],
        ended_at=_ts(row[8]),
        episode_id=row[9],
        summarized_at=_ts(row[10]),
        title=row[11],
        user_id=row[12],
    )


def _observation(row: Sequence[Any]) -> Observation:
    return Observation(
        key=row[0],
        session=row[1],
        environment_id=row[2],
        agent=row[3],
        kind=row[4],
        at=datetime.fromtimestamp(row[5], UTC),
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
                conn.execute(
                    _UPSERT_SESSION,
                    (
                        s.id,
                        s.environment_id,
                        s.agent,
                        s.session_id,
                        s.cwd,
                        s.title,
                        s.first_at.timestamp(),
                        s.last_at.timestamp(),
                        None if s.ended_at is None else s.ended_at.timestamp(),
                        s.user_id,
                    ),
                )
            for o in observations:
                cur = conn.execute(
                    _INSERT_OBS,
                    (
                        o.key,
                        o.session,
                        o.environment_id,
                        o.agent,
                        o.kind,
                        o.at.timestamp(),
                        o.hook,
                        o.text,
                        o.tool,
                        o.command,
                        json.dumps(list(o.files)),
                        o.output,
                        int(o.failed),
                        o.detail,
                    ),
                )
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
            .execute(f"SELECT {_SESSION_COLS} FROM capture_sessions WHERE id = ?", (session_id,))
            .fetchone()
        )
        return _session(row) if row else None

    def list_sessions(
        self, environment_ids: Sequence[str], *, limit: int, agent: str | None = None
    ) -> list[CapturedSession]:
        cond, params = _in("environment_id", environment_ids)
        if agent:
            cond += " AND agent = ?"
            params.append(agent)
        rows = self._db.reader().execute(
            f"SELECT {_SESSION_COLS} FROM capture_sessions WHERE 1 = 1{cond} "
            "ORDER BY last_event_at DESC, id LIMIT ?",
            [*params, limit],
        )
        return [_session(r) for r in rows.fetchall()]

    def observations(self, session_id: str, *, limit: int, after: int = 0) -> list[Observation]:
        rows = self._db.reader().execute(
            f"SELECT {_OBS_COLS} FROM capture_observations WHERE session = ? AND seq > ? "
            "ORDER BY at, seq LIMIT ?",
            (session_id, after, limit),
        )
        return [_observation(r) for r in rows.fetchall()]

    def search_observations(
        self, environment_ids: Sequence[str], query: str, *, limit: int
    ) -> list[Observation]:
        words = _WORD.findall(query)[:32]
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        cond, params = _in("o.environment_id", environment_ids)
        cols = ", ".join(f"o.{c.strip()}" for c in _OBS_COLS.split(","))
        rows = self._db.reader().execute(
            f"SELECT {cols} FROM capture_fts JOIN capture_observations o ON o.seq = "
            f"capture_fts.rowid WHERE capture_fts MATCH ?{cond} "
            "ORDER BY bm25(capture_fts), o.seq LIMIT ?",
            [match, *params, limit],
        )
        return [_observation(r) for r in rows.fetchall()]

    def set_episode(self, session_id: str, episode_id: str, at: datetime) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE capture_sessions SET episode_id = ?, summarized_at = ? WHERE id = ?",
                (episode_id, at.timestamp(), session_id),
            )

    def unsummarized(self, idle_since: datetime, *, limit: int) -> list[CapturedSession]:
        rows = self._db.reader().execute(
            f"SELECT {_SESSION_COLS} FROM capture_sessions "
            "WHERE (summarized_at IS NULL OR summarized_at < last_event_at) "
            "AND last_event_at < ? ORDER BY last_event_at LIMIT ?",
            (idle_since.timestamp(), limit),
        )
        return [_session(r) for r in rows.fetchall()]

    def count_observations(self, environment_ids: Sequence[str]) -> int:
        cond, params = _in("environment_id", environment_ids)
        row = (
            self._db.reader()
            .execute(f"SELECT count(*) FROM capture_observations WHERE 1 = 1{cond}", params)
            .fetchone()
        )
        return int(row[0])
