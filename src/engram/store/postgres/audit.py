"""The audit log on PostgreSQL: append-only rows; targets as a JSON array behind a GIN index."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from engram.accounts import AuditEntry, AuditQuery
from engram.store.postgres.db import Connection, PostgresDatabase, retried

Cursor = psycopg.Cursor[tuple[Any, ...]]

_COLS = (
    "id, at, user_id, key_id, interface, action, environment_id, targets, before, after, details"
)


def insert_audit(conn: Connection | Cursor, entries: Sequence[AuditEntry]) -> None:
    """Append entries inside the caller's transaction (a connection or one of its cursors)."""
    if not entries:
        return
    if isinstance(conn, psycopg.Cursor):
        _insert(conn, entries)
    else:
        with conn.cursor() as cur:
            _insert(cur, entries)


def _insert(cur: Cursor, entries: Sequence[AuditEntry]) -> None:
    cur.executemany(
        f"INSERT INTO audit_log ({_COLS}) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, %s::jsonb)",
        [
            (
                e.id,
                e.at,
                e.user_id,
                e.key_id,
                e.interface,
                e.action,
                e.environment_id,
                json.dumps(e.targets),
                json.dumps(e.before),
                json.dumps(e.after),
                json.dumps(e.details, default=str),
            )
            for e in entries
        ],
    )


def _entry(row: Sequence[Any]) -> AuditEntry:
    return AuditEntry(
        id=row[0],
        at=row[1],
        user_id=row[2],
        key_id=row[3],
        interface=row[4],
        action=row[5],
        environment_id=row[6],
        targets=row[7],
        before=row[8],
        after=row[9],
        details=row[10],
    )


class PostgresAuditStore:
    """Implements :class:`engram.store.accounts.AuditStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def append(self, entries: Sequence[AuditEntry]) -> None:
        if entries:
            with self._db.tx() as conn:
                insert_audit(conn, entries)

    def query(self, q: AuditQuery) -> list[AuditEntry]:
        cond: list[str] = []
        params: list[Any] = []
        for column in ("user_id", "key_id", "interface", "environment_id"):
            value = getattr(q, column)
            if value is not None:
                cond.append(f"{column} = %s")
                params.append(value)
        if q.action is not None:
            if q.action.endswith("."):
                cond.append("starts_with(action, %s)")
            else:
                cond.append("action = %s")
            params.append(q.action)
        if q.target is not None:
            cond.append("targets @> %s::jsonb")
            params.append(json.dumps([q.target]))
        if q.since is not None:
            cond.append("at >= %s")
            params.append(q.since)
        if q.until is not None:
            cond.append("at <= %s")
            params.append(q.until)
        query = f"SELECT {_COLS} FROM audit_log"
        if cond:
            query += " WHERE " + " AND ".join(cond)
        query += " ORDER BY seq DESC LIMIT %s OFFSET %s"
        with self._db.reader() as conn:
            rows = conn.execute(query, [*params, q.limit, q.offset]).fetchall()
        return [_entry(r) for r in rows]
