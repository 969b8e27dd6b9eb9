"""The vectors' table as a rowid table (migration 0027).

Migration 0002 made ``memory_vectors`` a ``WITHOUT ROWID`` table: its rows live in the key
b-tree itself, and a 1.5 KB vector does not fit a leaf cell, so each row spills onto an overflow
page that every key comparison of a lookup reads. Each search re-scores ~180 rows from their
float32 vectors (and reads the cosines of keyword hits the vector stage did not return): 14 ms
for 180 rows at 100k memories on the shared test machine, 2 ms as a rowid table with the same
key (its PRIMARY KEY becomes a unique index). The copy runs once, in the migration's
transaction (~2 s of CPU at 100k); the old pages stay free in the file until reused.
"""

from __future__ import annotations

_COLUMNS = "memory_seq, model_id, environment_id, content_hash, dim, vector, rev"

ROWID_STATEMENTS = (
    """CREATE TABLE memory_vectors_rowid (
        memory_seq INTEGER NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
        model_id TEXT NOT NULL,
        environment_id TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        rev INTEGER NOT NULL,
        PRIMARY KEY (memory_seq, model_id)
    )""",
    f"INSERT INTO memory_vectors_rowid ({_COLUMNS}) SELECT {_COLUMNS} FROM memory_vectors "
    "ORDER BY memory_seq, model_id",
    "DROP TABLE memory_vectors",
    "ALTER TABLE memory_vectors_rowid RENAME TO memory_vectors",
    "CREATE INDEX memory_vectors_rev ON memory_vectors (model_id, rev)",
)
