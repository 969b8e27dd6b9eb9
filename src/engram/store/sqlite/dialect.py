"""The sub-stores written once for both backends (:mod:`engram.store.sql_dialect`), on SQLite:
times as epoch seconds; every write transaction is already one at a time."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from engram.store.oauth_registry import SQLClientRegistry
from engram.store.sign_ins import SQLSignInFailureStore
from engram.store.sql_dialect import Dialect
from engram.store.sqlite.db import SQLiteDatabase
from engram.store.web_sessions import SQLWebSessionStore


class _OnSQLite(Dialect):
    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def _tx(self) -> AbstractContextManager[Any]:
        return self._db.tx()

    def _one(self, sql: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._db.reader().execute(sql, params).fetchone()
        return row

    def _all(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = self._db.reader().execute(sql, params).fetchall()
        return rows


class SQLiteWebSessionStore(_OnSQLite, SQLWebSessionStore):
    """Implements :class:`engram.store.web_sessions.WebSessionStore`."""


class SQLiteClientRegistry(_OnSQLite, SQLClientRegistry):
    """Implements :class:`engram.store.oauth_registry.ClientRegistry`."""


class SQLiteSignInFailureStore(_OnSQLite, SQLSignInFailureStore):
    """Implements :class:`engram.store.sign_ins.SignInFailureStore`."""
