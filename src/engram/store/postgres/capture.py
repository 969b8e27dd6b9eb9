"""Captured sessions and observations on PostgreSQL; observations are keyword-searchable
through a generated ``tsvector`` with a GIN index."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.store.capture import CapturedSession, Observation, SessionTouch
from engram.store.capture_columns import (
    OBSERVATION_COLUMNS,
    OBSERVATION_WRITE_FIELDS,
    SESSION_COLUMNS,
    SESSION_WRITE_FIELDS,
    CaptureRows,
    observation_values,
    session_values,
)
from engram.store.postgres.db import PostgresDatabase

_UPSERT_SESSION = (
    f"INSERT INTO capture_sessions AS s ({', '.join(SESSION_WRITE_FIELDS)}) "
    f"VALUES ({', '.join(['%s'] * len(SESSION_WRITE_FIELDS))}) "
    "ON CONFLICT (id) DO UPDATE SET started_at = least(s.started_at, excluded.started_at), "
    "last_event_at = greatest(s.last_event_at, excluded.last_event_at), "
    "ended_at = coalesce(excluded.ended_at, s.ended_at), "
    "cwd = CASE WHEN s.cwd = '' THEN excluded.cwd ELSE s.cwd END, "
    "title = CASE WHEN s.title = '' THEN excluded.title ELSE s.title END, "
    "user_id = CASE WHEN s.user_id = '' THEN excluded.user_id ELSE s.user_id END"
)
_INSERT_OBS = (
    f"INSERT INTO capture_observations ({', '.join(OBSERVATION_WRITE_FIELDS)}) "
    "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::text[], %s::boolean[], %s::text[]) "
    "ON CONFLICT (key) DO NOTHING RETURNING key, session"
)


ROWS = CaptureRows(time=lambda value: value)
"""Capture rows to value objects: psycopg returns timestamps as aware UTC datetimes."""


def _aware(value: datetime) -> datetime:
    return value


class PostgresCaptureStore:
    """Implements :class:`engram.store.capture.CaptureStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def add_observations(
        self, sessions: Sequence[SessionTouch], observations: Sequence[Observation]
    ) -> list[str]:
        with self._db.tx() as conn:
            # a fixed order: two batches touching the same sessions cannot deadlock
            for s in sorted(sessions, key=lambda s: s.id):
                conn.execute(_UPSERT_SESSION, session_values(s, _aware))
            if not observations:
                return []
            values = [observation_values(o, _aware) for o in observations]
            columns = [list(c) for c in zip(*values, strict=True)]  # one array per column
            rows = conn.execute(_INSERT_OBS, columns).fetchall()
            counts: dict[str, int] = {}
            for _, session in rows:
                counts[session] = counts.get(session, 0) + 1
            for session, n in sorted(counts.items()):
                conn.execute(
                    "UPDATE capture_sessions SET events = events + %s WHERE id = %s", (n, session)
                )
        return [r[0] for r in rows]

    def get_session(self, session_id: str) -> CapturedSession | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE id = %s", (session_id,)
            ).fetchone()
        return ROWS.session(row) if row else None

    def list_sessions(
        self,
        environment_ids: Sequence[str],
        *,
        limit: int,
        agent: str | None = None,
        summarised: bool = False,
    ) -> list[CapturedSession]:
        query = f"SELECT {SESSION_COLUMNS} FROM capture_sessions WHERE true"
        params: list[Any] = []
        if environment_ids:
            query += " AND environment_id = ANY(%s)"
            params.append(list(environment_ids))
        if agent:
            query += " AND agent = %s"
            params.append(agent)
        if summarised:
            query += " AND episode_id IS NOT NULL"
        with self._db.reader() as conn:
            rows = conn.execute(
                query + " ORDER BY last_event_at DESC, id LIMIT %s", [*params, limit]
            ).fetchall()
        return [ROWS.session(r) for r in rows]

    def observations(self, session_id: str, *, limit: int, after: int = 0) -> list[Observation]:
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {OBSERVATION_COLUMNS} FROM capture_observations "
                "WHERE session = %s AND seq > %s ORDER BY at, seq LIMIT %s",
                (session_id, after, limit),
            ).fetchall()
        return [ROWS.observation(r) for r in rows]

    def search_observations(
        self, environment_ids: Sequence[str], query: str, *, limit: int
    ) -> list[Observation]:
        words = [w for w in "".join(c if c.isalnum() else " " for c in query).split()][:32]
        if not words:
            return []
        sql = (
            f"SELECT {OBSERVATION_COLUMNS} FROM capture_observations, "
            "to_tsquery('english', %s) q WHERE tsv @@ q"
        )
        params: list[Any] = [" | ".join(words)]
        if environment_ids:
            sql += " AND environment_id = ANY(%s)"
            params.append(list(environment_ids))
        with self._db.reader() as conn:
            rows = conn.execute(
                sql + " ORDER BY ts_rank(tsv, q) DESC, seq LIMIT %s", [*params, limit]
            ).fetchall()
        return [ROWS.observation(r) for r in rows]

    def set_episode(self, session_id: str, episode_id: str, at: datetime) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "UPDATE capture_sessions SET episode_id = %s, summarized_at = %s WHERE id = %s",
                (episode_id, at, session_id),
            )

    def unsummarized(self, idle_since: datetime, *, limit: int) -> list[CapturedSession]:
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {SESSION_COLUMNS} FROM capture_sessions "
                "WHERE (summarized_at IS NULL OR summarized_at < last_event_at) "
                "AND last_event_at < %s ORDER BY last_event_at LIMIT %s",
                (idle_since, limit),
            ).fetchall()
        return [ROWS.session(r) for r in rows]

    def count_observations(self, environment_ids: Sequence[str]) -> int:
        query = "SELECT count(*) FROM capture_observations"
        params: list[Any] = []
        if environment_ids:
            query += " WHERE environment_id = ANY(%s)"
            params.append(list(environment_ids))
        with self._db.reader() as conn:
            row = conn.execute(query, params).fetchone()
        return int(row[0]) if row else 0
