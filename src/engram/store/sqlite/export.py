"""The SQLite side of :class:`engram.store.protocol.Exporter`."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from engram.store.protocol import EmbeddingUpdate
from engram.store.sqlite.db import SQLiteDatabase


class SQLiteExporter:
    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def key_digests(self) -> dict[str, str]:
        rows = self._db.reader().execute("SELECT id, digest FROM api_keys")
        return {r[0]: r[1] for r in rows}

    def embeddings(self, model_id: str) -> Iterator[EmbeddingUpdate]:
        rows = self._db.reader().execute(
            "SELECT m.id, v.content_hash, v.vector FROM memory_vectors v "
            "JOIN memories m ON m.seq = v.memory_seq WHERE v.model_id = ? ORDER BY m.seq",
            (model_id,),
        )
        for memory_id, content_hash, blob in rows:
            yield EmbeddingUpdate(memory_id, content_hash, np.frombuffer(blob, dtype=np.float32))

    def conversation_ids(self) -> list[str]:
        rows = self._db.reader().execute("SELECT id FROM conversations ORDER BY created_at, id")
        return [r[0] for r in rows]
