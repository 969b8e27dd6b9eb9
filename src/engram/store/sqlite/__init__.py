"""The SQLite implementation of the storage protocol."""

from engram.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
