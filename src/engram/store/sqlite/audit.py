"""The audit log on SQLite: append-only rows, one index row per target."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.accounts import AuditEntry, AuditQuery
from engram.store.sqlite.rows import inserted_rowid

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase

_COLS = (
    "id, at, user_id, key_id, interface, action, environment_id, targets, before, after, details"
)
_TARGET = "INSERT OR IGNORE INTO audit_targets (audit_seq, target) VALUES (?, ?)"


def _json(value: object) -> str:
    return json.dumps(value, default=str) if value else "{}"


def insert_audit(conn: sqlite3.Connection, entries: Sequence[AuditEntry]) -> None:
    """Append entries inside the caller's transaction."""
    for e in entries:
        cur = conn.execute(
            f"INSERT INTO audit_log ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                e.id,
                e.at.timestamp(),
                e.user_id,
                e.key_id,
                e.interface,
                e.action,
                e.environment_id,
                json.dumps(e.targets),
                _json(e.before),
                _json(e.after),
                _json(e.details),
            ),
        )
        seq = inserted_rowid(cur)
        if len(e.targets) == 1:
            conn.execute(_TARGET, (seq, e.targets[0]))
        elif e.targets:
            conn.executemany(_TARGET, [(seq, t) for t in e.targets])


def _entry(row: Sequence[Any]) -> AuditEntry:
    return AuditEntry(
        id=row[0],
        at=datetime.fromtimestamp(row[1], UTC),
        user_id=row[2],
        key_id=row[3],
        interface=row[4],
        action=row[5],
        environment_id=row[6],
        targets=json.loads(row[7]),
        before=json.loads(row[8]),
        after=json.loads(row[9]),
        details=json.loads(row[10]),
    )


class SQLiteAuditStore:
    """Implements :class:`engram.store.accounts.AuditStore` on the store's database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

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
                cond.append(f"a.{column} = ?")
                params.append(value)
        if q.action is not None:
            if q.action.endswith("."):
                cond.append("substr(a.action, 1, ?) = ?")
                params += [len(q.action), q.action]
            else:
                cond.append("a.action = ?")
                params.append(q.action)
        if q.target is not None:
            cond.append("a.seq IN (SELECT audit_seq FROM audit_targets WHERE target = ?)")
            params.append(q.target)
        if q.since is not None:
            cond.append("a.at >= ?")
            params.append(q.since.timestamp())
        if q.until is not None:
            cond.append("a.at <= ?")
            params.append(q.until.timestamp())
        sql = f"SELECT {', '.join('a.' + c.strip() for c in _COLS.split(','))} FROM audit_log a"
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        sql += " ORDER BY a.seq DESC LIMIT ? OFFSET ?"
        rows = self._db.reader().execute(sql, [*params, q.limit, q.offset]).fetchall()
        return [_entry(r) for r in rows]
