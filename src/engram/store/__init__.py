"""Storage: the protocol and a factory that opens a store from a URL or a path."""

from __future__ import annotations

from pathlib import Path

from engram.errors import InvalidInput, MissingDependency
from engram.store.protocol import (
    Access,
    Change,
    EmbeddingUpdate,
    Hit,
    MemoryText,
    PendingEmbedding,
    RankFields,
    Store,
)


def open_store(url: str | Path) -> Store:
    """Open a store: a filesystem path or ``sqlite:///path`` for SQLite (the default),
    ``postgresql://...`` for PostgreSQL."""
    text = str(url)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from engram.store.postgres import PostgresStore
        except ImportError as exc:
            raise MissingDependency.extra("PostgreSQL (psycopg)", "postgres") from exc
        return PostgresStore(text)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif "://" in text:
        raise InvalidInput(f"unsupported database URL {text!r}: use a path or sqlite:///path")
    from engram.store.sqlite import SQLiteStore

    return SQLiteStore(Path(text))


__all__ = [
    "Access",
    "Change",
    "EmbeddingUpdate",
    "Hit",
    "MemoryText",
    "PendingEmbedding",
    "RankFields",
    "Store",
    "open_store",
]
