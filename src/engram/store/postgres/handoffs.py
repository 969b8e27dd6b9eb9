"""Handoffs on PostgreSQL: the shared SQL (:mod:`engram.store.handoff_sql`) with ``%s``
placeholders, one transaction per statement, timestamps as ``timestamptz``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.store.handoff_sql import SQLHandoffStore
from engram.store.postgres.db import PostgresDatabase


def _pg(sql: str) -> str:
    return sql.replace("?", "%s")


class PostgresHandoffStore(SQLHandoffStore):
    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def _write(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        with self._db.tx() as conn:
            cur = conn.execute(_pg(sql), params)
            return list(cur.fetchall()) if cur.description else []

    def _read(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        with self._db.reader() as conn:
            return list(conn.execute(_pg(sql), params).fetchall())

    def _count(self, sql: str, params: Sequence[Any]) -> int:
        with self._db.tx() as conn:
            return conn.execute(_pg(sql), params).rowcount

    def _ts_in(self, value: datetime | None) -> Any:
        return value

    def _ts_out(self, value: Any) -> datetime | None:
        return value if isinstance(value, datetime) or value is None else None
