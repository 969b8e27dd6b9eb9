"""The PostgreSQL side of :class:`engram.store.protocol.Exporter`."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from engram.store.postgres.db import PostgresDatabase
from engram.store.protocol import EmbeddingUpdate


class PostgresExporter:
    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    def key_digests(self) -> dict[str, str]:
        with self._db.reader() as conn:
            return {r[0]: r[1] for r in conn.execute("SELECT id, digest FROM api_keys")}

    def embeddings(self, model_id: str) -> Iterator[EmbeddingUpdate]:
        # float4[] keeps pgvector's single-precision values exactly
        with self._db.reader() as conn:
            rows = conn.execute(
                "SELECT v.memory_id, v.content_hash, v.embedding::real[] FROM memory_vectors v "
                "JOIN memories m ON m.id = v.memory_id WHERE v.model_id = %s ORDER BY m.seq",
                (model_id,),
            ).fetchall()
        for memory_id, content_hash, values in rows:
            yield EmbeddingUpdate(memory_id, content_hash, np.asarray(values, dtype=np.float32))

    def conversation_ids(self) -> list[str]:
        with self._db.reader() as conn:
            rows = conn.execute("SELECT id FROM conversations ORDER BY created_at, id").fetchall()
        return [r[0] for r in rows]
