"""Configured LLM providers on PostgreSQL (the key column holds ciphertext only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.store.accounts import Audit
from engram.store.postgres.audit import insert_audit
from engram.store.postgres.db import PostgresDatabase, retried
from engram.store.providers import ProviderRecord

_COLS = "name, kind, base_url, model, api_key, timeout, created_at"


def _record(row: Sequence[Any]) -> ProviderRecord:
    return ProviderRecord(
        name=row[0],
        kind=row[1],
        base_url=row[2],
        model=row[3],
        encrypted_key=None if row[4] is None else bytes(row[4]),
        timeout=row[5],
        created_at=row[6],
    )


class PostgresProviderStore:
    """Implements :class:`engram.store.providers.ProviderStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def put_provider(self, record: ProviderRecord, audit: Audit = ()) -> None:
        r = record
        with self._db.tx() as conn:
            insert_audit(conn, audit)
            conn.execute(
                f"INSERT INTO llm_providers ({_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, "
                "base_url = excluded.base_url, model = excluded.model, "
                "api_key = excluded.api_key, timeout = excluded.timeout, "
                "created_at = excluded.created_at",
                (r.name, r.kind, r.base_url, r.model, r.encrypted_key, r.timeout, r.created_at),
            )

    def get_provider(self, name: str) -> ProviderRecord | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_COLS} FROM llm_providers WHERE name = %s", (name,)
            ).fetchone()
        return _record(row) if row else None

    def list_providers(self) -> list[ProviderRecord]:
        with self._db.reader() as conn:
            rows = conn.execute(f"SELECT {_COLS} FROM llm_providers ORDER BY name").fetchall()
        return [_record(r) for r in rows]

    @retried
    def delete_provider(self, name: str, audit: Audit = ()) -> bool:
        with self._db.tx() as conn:
            if conn.execute("DELETE FROM llm_providers WHERE name = %s", (name,)).rowcount != 1:
                return False
            insert_audit(conn, audit)
            return True
