"""Raw SQL against either test backend, for the few tests that check what is stored on disk.

Write placeholders as ``?``; they become ``%s`` on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from engram.scrub.store import ScrubbingStore
from engram.store import Store
from engram.store.sqlite import SQLiteStore


def query(store: Store, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    store = backend(store)
    if isinstance(store, SQLiteStore):
        return [tuple(r) for r in store.db.reader().execute(sql, params).fetchall()]
    from engram.store.postgres import PostgresStore

    assert isinstance(store, PostgresStore)
    with store.db.reader() as conn:
        return conn.execute(sql.replace("?", "%s"), params).fetchall()


def backend(store: Store) -> Store:
    """The real store under an Engram's scrubbing one."""
    return store.inner if isinstance(store, ScrubbingStore) else store
