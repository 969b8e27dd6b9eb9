"""Configured LLM providers on the SQLite store (the key column holds ciphertext only)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engram.store.accounts import Audit
from engram.store.providers import ProviderRecord
from engram.store.sqlite.audit import insert_audit
from engram.store.sqlite.db import SQLiteDatabase

_COLS = "name, kind, base_url, model, api_key, timeout, created_at"


def _record(row: Sequence[Any]) -> ProviderRecord:
    return ProviderRecord(
        name=row[0],
        kind=row[1],
        base_url=row[2],
        model=row[3],
        encrypted_key=None if row[4] is None else bytes(row[4]),
        timeout=row[5],
        created_at=datetime.fromtimestamp(row[6], UTC),
    )


class SQLiteProviderStore:
    """Implements :class:`engram.store.providers.ProviderStore`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def put_provider(self, record: ProviderRecord, audit: Audit = ()) -> None:
        r = record
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT OR REPLACE INTO llm_providers ({_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    r.name,
                    r.kind,
                    r.base_url,
                    r.model,
                    r.encrypted_key,
                    r.timeout,
                    r.created_at.timestamp(),
                ),
            )

    def get_provider(self, name: str) -> ProviderRecord | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_COLS} FROM llm_providers WHERE name = ?", (name,))
            .fetchone()
        )
        return _record(row) if row else None

    def list_providers(self) -> list[ProviderRecord]:
        rows = self._db.reader().execute(f"SELECT {_COLS} FROM llm_providers ORDER BY name")
        return [_record(r) for r in rows]

    def delete_provider(self, name: str, audit: Audit = ()) -> bool:
        with self._db.tx() as conn:
            if conn.execute("DELETE FROM llm_providers WHERE name = ?", (name,)).rowcount != 1:
                return False
            insert_audit(conn, audit)
            return True
