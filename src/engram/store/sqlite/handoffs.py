"""Handoffs on SQLite: the shared SQL (:mod:`engram.store.handoff_sql`) on the single writer
connection, timestamps as Unix seconds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.store.handoff_sql import SQLHandoffStore

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


class SQLiteHandoffStore(SQLHandoffStore):
    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def _write(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        with self._db.tx() as conn:
            return list(conn.execute(sql, params).fetchall())

    def _read(self, sql: str, params: Sequence[Any]) -> list[Sequence[Any]]:
        return list(self._db.reader().execute(sql, params).fetchall())

    def _count(self, sql: str, params: Sequence[Any]) -> int:
        with self._db.tx() as conn:
            return conn.execute(sql, params).rowcount

    def _ts_in(self, value: datetime | None) -> Any:
        return None if value is None else value.timestamp()

    def _ts_out(self, value: Any) -> datetime | None:
        return None if value is None else datetime.fromtimestamp(value, UTC)
