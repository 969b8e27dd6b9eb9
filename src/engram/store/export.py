"""What copying a store needs beyond the :class:`Store` protocol: the few stored values no
service ever reads back (key digests, raw vectors) and the list of conversations. Each backend
implements :class:`Exporter` in its own ``export`` module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from engram.errors import MissingDependency
from engram.store.protocol import EmbeddingUpdate, Store


class Exporter(Protocol):
    def key_digests(self) -> dict[str, str]:
        """Every API key's id -> its stored HMAC digest."""
        ...

    def embeddings(self, model_id: str) -> Iterator[EmbeddingUpdate]:
        """Every vector stored for ``model_id``, with the content hash it was made from."""
        ...

    def conversation_ids(self) -> list[str]:
        """Every conversation, oldest first."""
        ...


def exporter_for(store: Store) -> Exporter:
    from engram.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from engram.store.sqlite.export import SQLiteExporter

        return SQLiteExporter(store.db)
    from engram.store.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        from engram.store.postgres.export import PostgresExporter

        return PostgresExporter(store.db)
    raise MissingDependency(f"copying is not supported from {type(store).__name__}")
