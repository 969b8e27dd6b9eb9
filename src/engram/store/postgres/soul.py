"""The PostgreSQL implementation of :class:`engram.store.soul.SoulStore`.

The global layer is stored with ``environment_id`` NULL (the unique keys treat NULLs as equal);
an environment's overrides, their versions and snapshots cascade with the environment.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engram.errors import Conflict
from engram.soul.model import SoulBlock, SoulBlockVersion, SoulSnapshot
from engram.store.accounts import Audit
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import Connection, PostgresDatabase, retried

_COLS = (
    "name, section, environment_id, mode, text, priority, enabled, custom, version, "
    "updated_at, updated_by"
)
_SNAPSHOT_COLS = "id, owner, environment_id, kind, label, created_at, actor, blocks"
_UPSERT = (
    f"INSERT INTO soul_blocks (owner, {_COLS}) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (owner, environment_id, name) DO UPDATE SET "
    + ", ".join(
        f"{c.strip()} = excluded.{c.strip()}"
        for c in _COLS.split(",")
        if c.strip() not in ("name", "environment_id")
    )
    # only over the version this writer read: a concurrent writer makes this a no-op
    + " WHERE soul_blocks.version = %s"
)


def _block(row: Sequence[Any]) -> SoulBlock:
    return SoulBlock(
        name=row[0],
        section=row[1],
        environment_id=row[2],
        mode=row[3],
        text=row[4],
        priority=row[5],
        enabled=row[6],
        custom=row[7],
        version=row[8],
        updated_at=row[9],
        updated_by=row[10],
    )


def _snapshot(row: Sequence[Any]) -> SoulSnapshot:
    return SoulSnapshot(
        id=row[0],
        owner=row[1],
        environment_id=row[2],
        kind=row[3],
        label=row[4],
        created_at=row[5],
        actor=row[6],
        blocks=[SoulBlock.model_validate(b) for b in row[7]],
    )


class PostgresSoulStore:
    """Implements :class:`engram.store.soul.SoulStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def blocks(self, owner: str, environment_ids: Sequence[str | None]) -> list[SoulBlock]:
        if not environment_ids:
            return []
        envs = [e for e in dict.fromkeys(environment_ids) if e is not None]
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {_COLS} FROM soul_blocks WHERE owner = %s "
                "AND (environment_id = ANY(%s) OR (environment_id IS NULL AND %s))",
                (owner, envs, None in environment_ids),
            ).fetchall()
        return [_block(r) for r in rows]

    def versions(self, owner: str, environment_id: str | None, name: str) -> list[SoulBlockVersion]:
        with self._db.reader() as conn:
            rows = conn.execute(
                "SELECT action, reason, state::text FROM soul_block_versions "
                "WHERE owner = %s AND environment_id IS NOT DISTINCT FROM %s AND name = %s "
                "ORDER BY version",
                (owner, environment_id, name),
            ).fetchall()
        return [
            SoulBlockVersion(action=r[0], reason=r[1], state=SoulBlock.model_validate_json(r[2]))
            for r in rows
        ]

    @retried
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
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
                    (
                        snapshot.id,
                        snapshot.owner,
                        snapshot.environment_id,
                        snapshot.kind.value,
                        snapshot.label,
                        snapshot.created_at,
                        snapshot.actor,
                        json.dumps([b.model_dump(mode="json") for b in snapshot.blocks]),
                    ),
                )
            for change in changes:
                _apply(conn, owner, change)

    def snapshots(self, owner: str, environment_id: str | None) -> list[SoulSnapshot]:
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {_SNAPSHOT_COLS} FROM soul_snapshots "
                "WHERE owner = %s AND environment_id IS NOT DISTINCT FROM %s ORDER BY seq",
                (owner, environment_id),
            ).fetchall()
        return [_snapshot(r) for r in rows]

    def get_snapshot(self, owner: str, snapshot_id: str) -> SoulSnapshot | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_SNAPSHOT_COLS} FROM soul_snapshots WHERE owner = %s AND id = %s",
                (owner, snapshot_id),
            ).fetchone()
        return _snapshot(row) if row else None


def _apply(conn: Connection, owner: str, change: SoulBlockVersion) -> None:
    b = change.state
    row = conn.execute(
        "SELECT version FROM soul_blocks WHERE owner = %s "
        "AND environment_id IS NOT DISTINCT FROM %s AND name = %s FOR UPDATE",
        (owner, b.environment_id, b.name),
    ).fetchone()
    stored = row[0] if row else 0
    written = 0
    if b.version == stored + 1:
        written = conn.execute(
            _UPSERT,
            (
                owner,
                b.name,
                b.section.value,
                b.environment_id,
                b.mode.value,
                b.text,
                b.priority,
                b.enabled,
                b.custom,
                b.version,
                b.updated_at,
                b.updated_by,
                stored,
            ),
        ).rowcount
    if written != 1:
        # raising inside the transaction rolls back everything written so far
        raise Conflict(
            f"block {b.name!r} changed meanwhile (now version {stored}); try again", name=b.name
        )
    conn.execute(
        "INSERT INTO soul_block_versions "
        "(owner, environment_id, name, version, action, reason, state) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)",
        (
            owner,
            b.environment_id,
            b.name,
            b.version,
            change.action.value,
            change.reason,
            b.model_dump_json(),
        ),
    )
