"""Idempotency keys on the SQLite store (see :mod:`engram.store.idempotency`)."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from engram.store import idempotency
from engram.store.idempotency import InFlight, SQLIdempotencyStore

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


def mark_executed(conn: sqlite3.Connection, inflight: InFlight | None) -> None:
    idempotency.mark_executed(conn, inflight, "?")


class SQLiteIdempotencyStore(SQLIdempotencyStore):
    """Implements :class:`engram.store.idempotency.IdempotencyStore` (times as epoch seconds)."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def _tx(self) -> AbstractContextManager[Any]:
        return self._db.tx()

    def _time(self, at: datetime) -> object:
        return at.timestamp()

    def _read_time(self, value: Any) -> datetime:
        return datetime.fromtimestamp(value, UTC)
