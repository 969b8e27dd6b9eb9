"""Named, append-only, transactional migrations of the SQLite store.

Each migration runs inside one ``BEGIN IMMEDIATE`` transaction together with the row that
records it in ``schema_migrations``; a failure rolls both back. Never edit a migration that has
shipped: append a new one.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from engram.errors import StorageError


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_memories",
        (
            """CREATE TABLE environments (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                owner TEXT NOT NULL,
                description TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
                UNIQUE (owner, name)
            )""",
            # seq is the rowid shared with the FTS index and the vector table
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                environment_id TEXT NOT NULL REFERENCES environments(id),
                layer TEXT NOT NULL,
                status TEXT NOT NULL,
                category TEXT NOT NULL,
                content TEXT NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                importance REAL NOT NULL,
                confidence REAL NOT NULL,
                source TEXT NOT NULL,
                pinned INTEGER NOT NULL DEFAULT 0,
                supersedes TEXT,
                superseded_by TEXT,
                merged_into TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                last_accessed_at REAL,
                access_count INTEGER NOT NULL DEFAULT 0,
                reinforcement_count INTEGER NOT NULL DEFAULT 0,
                author TEXT,
                metadata TEXT NOT NULL DEFAULT '{}',
                details TEXT,
                version INTEGER NOT NULL,
                content_hash TEXT NOT NULL
            )""",
            "CREATE INDEX memories_env_status ON memories (environment_id, status, layer)",
            "CREATE INDEX memories_env_updated ON memories (environment_id, updated_at)",
            "CREATE INDEX memories_env_created ON memories (environment_id, created_at)",
            """CREATE TABLE memory_versions (
                memory_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                action TEXT NOT NULL,
                at REAL NOT NULL,
                actor TEXT,
                reason TEXT NOT NULL DEFAULT '',
                snapshot TEXT NOT NULL,
                PRIMARY KEY (memory_id, version)
            ) WITHOUT ROWID""",
            # porter stemming over unicode61 word splitting, diacritics folded
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                text, tokenize = 'porter unicode61 remove_diacritics 2'
            )""",
        ),
    ),
    Migration(
        "0002_vectors",
        (
            """CREATE TABLE memory_vectors (
                memory_seq INTEGER NOT NULL REFERENCES memories(seq) ON DELETE CASCADE,
                model_id TEXT NOT NULL,
                environment_id TEXT NOT NULL,
                content_hash TEXT NOT NULL,
                dim INTEGER NOT NULL,
                vector BLOB NOT NULL,
                rev INTEGER NOT NULL,
                PRIMARY KEY (memory_seq, model_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX memory_vectors_rev ON memory_vectors (model_id, rev)",
            # a counter bumped whenever vectors disappear, so in-memory indexes know to reload
            "CREATE TABLE store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
            "INSERT INTO store_meta (key, value) VALUES ('vector_epoch', 0), ('vector_rev', 0)",
        ),
    ),
)


def applied(conn: sqlite3.Connection) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Apply every migration not yet recorded; return the names applied now.

    ``conn`` must be in autocommit mode (``isolation_level=None``) so that the explicit
    transactions here are the only ones.
    """
    done = set(applied(conn))
    ran: list[str] = []
    for migration in migrations:
        if migration.name in done:
            continue
        try:
            conn.execute("BEGIN IMMEDIATE")
            # another process may have applied it while we waited for the write lock
            if conn.execute(
                "SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)
            ).fetchone():
                conn.execute("COMMIT")
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, time.time()),
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StorageError(f"migration {migration.name} failed: {exc}") from exc
        ran.append(migration.name)
    return ran
