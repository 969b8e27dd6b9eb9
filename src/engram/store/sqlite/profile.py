"""The cross-project profile on SQLite: one row per habit, one per user who opted in."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.errors import Conflict
from engram.store.profile import COLUMNS, ProfileEntry, entry_of

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase

_COLS = COLUMNS


def _entry(row: Sequence[Any]) -> ProfileEntry:
    return entry_of(row, lambda t: datetime.fromtimestamp(t, UTC))


class SQLiteProfileStore:
    """Implements :class:`engram.store.profile.ProfileStore` on the store's database."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def put_entry(self, entry: ProfileEntry) -> None:
        try:
            with self._db.tx() as conn:
                conn.execute(
                    f"INSERT INTO profile_entries ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (id) DO UPDATE SET key = excluded.key, text = excluded.text, "
                    "projects = excluded.projects, stated_global = excluded.stated_global, "
                    "updated_at = excluded.updated_at",
                    (
                        entry.id,
                        entry.user_id,
                        entry.key,
                        entry.text,
                        json.dumps(list(entry.projects)),
                        int(entry.stated_global),
                        entry.created_at.timestamp(),
                        entry.updated_at.timestamp(),
                    ),
                )
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"the profile already holds {entry.text!r}") from exc

    def _one(self, where: str, params: Sequence[Any]) -> ProfileEntry | None:
        sql = f"SELECT {_COLS} FROM profile_entries WHERE {where}"
        row = self._db.reader().execute(sql, params).fetchone()
        return _entry(row) if row else None

    def get_entry(self, entry_id: str) -> ProfileEntry | None:
        return self._one("id = ?", (entry_id,))

    def find_entry(self, user_id: str, key: str) -> ProfileEntry | None:
        return self._one("user_id = ? AND key = ?", (user_id, key))

    def list_entries(self, user_id: str) -> list[ProfileEntry]:
        sql = f"SELECT {_COLS} FROM profile_entries WHERE user_id = ? ORDER BY created_at, id"
        return [_entry(r) for r in self._db.reader().execute(sql, (user_id,)).fetchall()]

    def delete_entry(self, entry_id: str) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute("DELETE FROM profile_entries WHERE id = ?", (entry_id,))
            return cur.rowcount > 0

    def set_learning(self, user_id: str, enabled: bool) -> None:
        with self._db.tx() as conn:
            conn.execute(
                "INSERT INTO profile_learning (user_id, enabled) VALUES (?, ?) "
                "ON CONFLICT (user_id) DO UPDATE SET enabled = excluded.enabled",
                (user_id, int(enabled)),
            )

    def learning(self, user_id: str) -> bool:
        row = (
            self._db.reader()
            .execute("SELECT enabled FROM profile_learning WHERE user_id = ?", (user_id,))
            .fetchone()
        )
        return bool(row and row[0])
