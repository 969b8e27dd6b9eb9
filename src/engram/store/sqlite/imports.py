"""The import ledger on SQLite (table ``import_keys``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase

_CHUNK = 500


class SQLiteImportLedger:
    """Implements :class:`engram.store.imports.ImportLedger`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def seen(self, environment_id: str, keys: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        conn = self._db.reader()
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                "SELECT key, target FROM import_keys "
                f"WHERE environment_id = ? AND key IN ({marks})",
                [environment_id, *chunk],
            )
            out.update({r[0]: r[1] for r in rows})
        return out

    def record(self, environment_id: str, entries: Sequence[tuple[str, str]]) -> None:
        if not entries:
            return
        with self._db.tx() as conn:
            conn.executemany(
                "INSERT INTO import_keys (environment_id, key, target) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [(environment_id, k, t) for k, t in entries],
            )

    def entries(self, environment_id: str) -> list[tuple[str, str]]:
        rows = self._db.reader().execute(
            "SELECT key, target FROM import_keys WHERE environment_id = ? ORDER BY key",
            (environment_id,),
        )
        return [(r[0], r[1]) for r in rows]

    def forget_targets(self, target_ids: Sequence[str]) -> int:
        removed = 0
        with self._db.tx() as conn:
            for start in range(0, len(target_ids), _CHUNK):
                chunk = list(target_ids[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                removed += conn.execute(
                    f"DELETE FROM import_keys WHERE target IN ({marks})", chunk
                ).rowcount
        return removed
