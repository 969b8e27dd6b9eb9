"""The sub-stores written once for both backends (:mod:`engram.store.sql_dialect`), on
PostgreSQL: times as ``timestamptz``, ``%s`` placeholders."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from engram.store.oauth_registry import SQLClientRegistry
from engram.store.postgres.db import PostgresDatabase
from engram.store.sign_ins import SQLSignInFailureStore
from engram.store.sql_dialect import Dialect
from engram.store.web_sessions import SQLWebSessionStore


class _OnPostgres(Dialect):
    placeholder = "%s"

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def _tx(self) -> AbstractContextManager[Any]:
        return self._db.tx()

    def _one(self, sql: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        with self._db.reader() as conn:
            row: tuple[Any, ...] | None = conn.execute(self._sql(sql), params).fetchone()
            return row

    def _all(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        with self._db.reader() as conn:
            rows: list[tuple[Any, ...]] = conn.execute(self._sql(sql), params).fetchall()
            return rows

    def _time(self, at: datetime) -> object:
        return at


class PostgresWebSessionStore(_OnPostgres, SQLWebSessionStore):
    """Implements :class:`engram.store.web_sessions.WebSessionStore`."""


class PostgresSignInFailureStore(_OnPostgres, SQLSignInFailureStore):
    """Implements :class:`engram.store.sign_ins.SignInFailureStore`."""


class PostgresClientRegistry(_OnPostgres, SQLClientRegistry):
    """Implements :class:`engram.store.oauth_registry.ClientRegistry`; registrations take
    turns on a table lock (READ COMMITTED would let two see room for one)."""

    def _serialize(self, conn: Any) -> None:
        conn.execute("LOCK TABLE oauth_clients IN SHARE ROW EXCLUSIVE MODE")
