"""What a small sub-store written once for both backends needs from its dialect: the
placeholder, a write transaction, a one-row read, and how a time is stored (SQLite: epoch
seconds; PostgreSQL: ``timestamptz``). :mod:`engram.store.web_sessions`,
:mod:`engram.store.oauth_registry` and :mod:`engram.store.sign_ins` build on it; each backend
binds it to its database (``engram.store.sqlite.dialect``, ``engram.store.postgres.dialect``)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any


class Dialect:
    """One backend's side of a shared SQL sub-store (written with ``?`` placeholders)."""

    placeholder = "?"

    def _tx(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _one(self, sql: str, params: Sequence[object]) -> tuple[Any, ...] | None:
        """The first row of a read, outside any write transaction."""
        raise NotImplementedError

    def _all(self, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
        """Every row of a read, outside any write transaction."""
        raise NotImplementedError

    def _sql(self, sql: str) -> str:
        return sql.replace("?", self.placeholder)

    def _time(self, at: datetime) -> object:
        return at.timestamp()

    def _read_time(self, value: Any) -> datetime:
        if isinstance(value, datetime):
            return value
        return datetime.fromtimestamp(value, UTC)

    def _run(self, sql: str, params: Sequence[object]) -> int:
        """One statement in its own transaction; how many rows it touched."""
        with self._tx() as conn:
            return int(conn.execute(self._sql(sql), params).rowcount)
