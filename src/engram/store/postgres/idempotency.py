"""Idempotency keys on the PostgreSQL store (see :mod:`engram.store.idempotency`). A
concurrent duplicate's INSERT waits for the first reservation to commit, then finds it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from engram.store.idempotency import SQLIdempotencyStore

if TYPE_CHECKING:
    from engram.store.postgres.db import PostgresDatabase


class PostgresIdempotencyStore(SQLIdempotencyStore):
    """Implements :class:`engram.store.idempotency.IdempotencyStore`."""

    placeholder = "%s"

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def _tx(self) -> AbstractContextManager[Any]:
        return self._db.tx()
