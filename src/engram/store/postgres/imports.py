"""The import ledger on PostgreSQL (table ``import_keys``)."""

from __future__ import annotations

from collections.abc import Sequence

from engram.store.postgres.db import PostgresDatabase


class PostgresImportLedger:
    """Implements :class:`engram.store.imports.ImportLedger`."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def seen(self, environment_id: str, keys: Sequence[str]) -> dict[str, str]:
        if not keys:
            return {}
        with self._db.reader() as conn:
            rows = conn.execute(
                "SELECT key, target FROM import_keys WHERE environment_id = %s AND key = ANY(%s)",
                (environment_id, list(keys)),
            ).fetchall()
        return {r[0]: r[1] for r in rows}

    def record(self, environment_id: str, entries: Sequence[tuple[str, str]]) -> None:
        if not entries:
            return
        with self._db.tx() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO import_keys (environment_id, key, target) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [(environment_id, k, t) for k, t in entries],
            )

    def entries(self, environment_id: str) -> list[tuple[str, str]]:
        with self._db.reader() as conn:
            rows = conn.execute(
                "SELECT key, target FROM import_keys WHERE environment_id = %s ORDER BY key",
                (environment_id,),
            ).fetchall()
        return [(r[0], r[1]) for r in rows]

    def forget_targets(self, target_ids: Sequence[str]) -> int:
        if not target_ids:
            return 0
        with self._db.tx() as conn:
            cur = conn.execute(
                "DELETE FROM import_keys WHERE target = ANY(%s)", (list(target_ids),)
            )
            return cur.rowcount
