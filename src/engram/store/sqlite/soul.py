"""The SQLite implementation of :class:`engram.store.soul.SoulStore`.

The global layer is stored with ``environment_id = ''`` (a primary key cannot hold NULL
usefully); ``None`` is used everywhere outside this module.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engram.errors import Conflict
from engram.soul.model import SoulBlock, SoulBlockVersion, SoulSnapshot
from engram.store.accounts import Audit
from engram.store.sqlite.audit import insert_audit
from engram.store.sqlite.rows import dt, ts

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


_COLS = (
    "name, section, environment_id, mode, text, priority, enabled, custom, version, "
    "updated_at, updated_by"
)


def _layer(environment_id: str | None) -> str:
    return environment_id or ""


def _block(row: sqlite3.Row | tuple[Any, ...]) -> SoulBlock:
    return SoulBlock(
        name=row[0],
        section=row[1],
        environment_id=row[2] or None,
        mode=row[3],
        text=row[4],
        priority=row[5],
        enabled=None if row[6] is None else bool(row[6]),
        custom=bool(row[7]),
        version=row[8],
        updated_at=dt(row[9]),
        updated_by=row[10],
    )


def _snapshot(row: tuple[Any, ...]) -> SoulSnapshot:
    return SoulSnapshot(
        id=row[0],
        owner=row[1],
        environment_id=row[2] or None,
        kind=row[3],
        label=row[4],
        created_at=dt(row[5]),
        actor=row[6],
        blocks=[SoulBlock.model_validate(b) for b in json.loads(row[7])],
    )


_SNAPSHOT_COLS = "id, owner, environment_id, kind, label, created_at, actor, blocks"


class SQLiteSoulStore:
    """Implements :class:`engram.store.soul.SoulStore` inside a :class:`SQLiteDatabase`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def blocks(self, owner: str, environment_ids: Sequence[str | None]) -> list[SoulBlock]:
        layers = list(dict.fromkeys(_layer(e) for e in environment_ids))
        if not layers:
            return []
        rows = (
            self._db.reader()
            .execute(
                f"SELECT {_COLS} FROM soul_blocks WHERE owner = ? "
                f"AND environment_id IN ({','.join('?' * len(layers))})",
                [owner, *layers],
            )
            .fetchall()
        )
        return [_block(r) for r in rows]

    def versions(self, owner: str, environment_id: str | None, name: str) -> list[SoulBlockVersion]:
        rows = (
            self._db.reader()
            .execute(
                "SELECT action, reason, state FROM soul_block_versions "
                "WHERE owner = ? AND environment_id = ? AND name = ? ORDER BY version",
                (owner, _layer(environment_id), name),
            )
            .fetchall()
        )
        return [
            SoulBlockVersion(action=r[0], reason=r[1], state=SoulBlock.model_validate_json(r[2]))
            for r in rows
        ]

    def write(
        self,
        owner: str,
        changes: Sequence[SoulBlockVersion],
        snapshot: SoulSnapshot | None = None,
        audit: Audit = (),
    ) -> None:
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            if snapshot is not None:
                conn.execute(
                    f"INSERT INTO soul_snapshots ({_SNAPSHOT_COLS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        snapshot.id,
                        snapshot.owner,
                        _layer(snapshot.environment_id),
                        snapshot.kind.value,
                        snapshot.label,
                        ts(snapshot.created_at),
                        snapshot.actor,
                        json.dumps([b.model_dump(mode="json") for b in snapshot.blocks]),
                    ),
                )
            for change in changes:
                self._apply(conn, owner, change)

    def _apply(self, conn: sqlite3.Connection, owner: str, change: SoulBlockVersion) -> None:
        b = change.state
        key = (owner, _layer(b.environment_id), b.name)
        row = conn.execute(
            "SELECT version FROM soul_blocks WHERE owner = ? AND environment_id = ? AND name = ?",
            key,
        ).fetchone()
        stored = row[0] if row else 0
        if b.version != stored + 1:
            # raising inside the transaction rolls back everything written so far
            raise Conflict(
                f"block {b.name!r} changed meanwhile (now version {stored}); try again",
                name=b.name,
            )
        conn.execute(
            f"INSERT OR REPLACE INTO soul_blocks (owner, {_COLS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                owner,
                b.name,
                b.section.value,
                _layer(b.environment_id),
                b.mode.value,
                b.text,
                b.priority,
                None if b.enabled is None else int(b.enabled),
                int(b.custom),
                b.version,
                ts(b.updated_at),
                b.updated_by,
            ),
        )
        conn.execute(
            "INSERT INTO soul_block_versions "
            "(owner, environment_id, name, version, action, reason, state) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (*key, b.version, change.action.value, change.reason, b.model_dump_json()),
        )

    def snapshots(self, owner: str, environment_id: str | None) -> list[SoulSnapshot]:
        rows = (
            self._db.reader()
            .execute(
                f"SELECT {_SNAPSHOT_COLS} FROM soul_snapshots "
                "WHERE owner = ? AND environment_id = ? ORDER BY seq",
                (owner, _layer(environment_id)),
            )
            .fetchall()
        )
        return [_snapshot(r) for r in rows]

    def get_snapshot(self, owner: str, snapshot_id: str) -> SoulSnapshot | None:
        row = (
            self._db.reader()
            .execute(
                f"SELECT {_SNAPSHOT_COLS} FROM soul_snapshots WHERE owner = ? AND id = ?",
                (owner, snapshot_id),
            )
            .fetchone()
        )
        return _snapshot(row) if row else None
