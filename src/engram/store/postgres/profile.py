"""The cross-project profile on PostgreSQL: one row per habit, one per user who opted in."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engram.store.postgres.db import PostgresDatabase, retried
from engram.store.profile import COLUMNS, ProfileEntry, entry_of

_COLS = COLUMNS


def _entry(row: Sequence[Any]) -> ProfileEntry:
    return entry_of(row, lambda t: t)


class PostgresProfileStore:
    """Implements :class:`engram.store.profile.ProfileStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def put_entry(self, entry: ProfileEntry) -> None:
        # a broken (user, key) rule surfaces from tx() as Conflict
        with self._db.tx() as conn:
            conn.execute(
                f"INSERT INTO profile_entries ({_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET key = excluded.key, text = excluded.text, "
                "projects = excluded.projects, stated_global = excluded.stated_global, "
                "updated_at = excluded.updated_at",
                (
                    entry.id,
                    entry.user_id,
                    entry.key,
                    entry.text,
                    json.dumps(list(entry.projects)),
                    entry.stated_global,
                    entry.created_at,
                    entry.updated_at,
                ),
            )

    @retried
    def _one(self, where: str, params: Sequence[Any]) -> ProfileEntry | None:
        with self._db.reader() as conn:
            row = conn.execute(f"SELECT {_COLS} FROM profile_entries WHERE {where}", params)
            found = row.fetchone()
        return _entry(found) if found else None

    def get_entry(self, entry_id: str) -> ProfileEntry | None:
        return self._one("id = %s", (entry_id,))

    def find_entry(self, user_id: str, key: str) -> ProfileEntry | None:
        return self._one("user_id = %s AND key = %s", (user_id, key))

    @retried
    def list_entries(self, user_id: str) -> list[ProfileEntry]:
        sql = f"SELECT {_COLS} FROM profile_entries WHERE user_id = %s ORDER BY created_at, id"
        with self._db.reader() as conn:
            return [_entry(r) for r in conn.execute(sql, (user_id,)).fetchall()]

    @retried
    def delete_entry(self, entry_id: str) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute("DELETE FROM profile_entries WHERE id = %s", (entry_id,))
            return cur.rowcount > 0

    @retried
    def set_learning(self, user_id: str, enabled: bool) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "INSERT INTO profile_learning (user_id, enabled) VALUES (%s, %s) "
                "ON CONFLICT (user_id) DO UPDATE SET enabled = excluded.enabled",
                (user_id, enabled),
            )

    @retried
    def learning(self, user_id: str) -> bool:
        with self._db.reader() as conn:
            row = conn.execute(
                "SELECT enabled FROM profile_learning WHERE user_id = %s", (user_id,)
            ).fetchone()
        return bool(row and row[0])
