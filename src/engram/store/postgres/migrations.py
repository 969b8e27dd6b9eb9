"""Named, append-only, transactional migrations of the PostgreSQL store.

Every process that opens the database runs :func:`migrate`: it takes a session advisory lock
(so concurrent servers apply each migration exactly once), then applies each migration not yet
recorded in ``schema_migrations`` in its own transaction together with the row that records it;
a failure rolls both back. Never edit a migration that has shipped: append a new one
(to :mod:`engram.store.postgres.migrations_later`).

Keys: every table that holds an environment's data carries ``environment_id``, so the schema
can be distributed by environment (Citus) when one server is not enough.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import psycopg

from engram.errors import StorageError
from engram.store.postgres.migration import Migration
from engram.store.postgres.migrations_later import LATER

Connection = psycopg.Connection[tuple[Any, ...]]


class Database(Protocol):
    """What :func:`migrate` needs of a :class:`~engram.store.postgres.db.PostgresDatabase`
    (which runs it on open: db.py imports this module, never the reverse)."""

    def advisory_lock(self, name: str, *, wait: bool = True) -> AbstractContextManager[bool]: ...

    def connection(self) -> AbstractContextManager[Connection]: ...


LOCK_NAME = "schema_migrations"


__all__ = ["MIGRATIONS", "Migration", "applied", "migrate"]

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_memories",
        (
            # pgvector; on a managed PostgreSQL enable it once as an admin if this role cannot
            "CREATE EXTENSION IF NOT EXISTS vector",
            """CREATE TABLE environments (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                owner TEXT NOT NULL,
                description TEXT NOT NULL DEFAULT '',
                created_at TIMESTAMPTZ NOT NULL,
                metadata JSONB NOT NULL DEFAULT '{}',
                UNIQUE (owner, name)
            )""",
            # seq orders ties and embedding work; keyword_text is what keyword search indexes,
            # tsv its english tsvector, kept by PostgreSQL in the same row and transaction
            """CREATE TABLE memories (
                seq BIGINT GENERATED ALWAYS AS IDENTITY,
                id TEXT PRIMARY KEY,
                environment_id TEXT NOT NULL REFERENCES environments(id),
                layer TEXT NOT NULL,
                status TEXT NOT NULL,
                category TEXT NOT NULL,
                content TEXT NOT NULL,
                tags JSONB NOT NULL DEFAULT '[]',
                importance DOUBLE PRECISION NOT NULL,
                confidence DOUBLE PRECISION NOT NULL,
                source TEXT NOT NULL,
                pinned BOOLEAN NOT NULL DEFAULT false,
                supersedes TEXT,
                superseded_by TEXT,
                merged_into TEXT,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                last_accessed_at TIMESTAMPTZ,
                access_count INTEGER NOT NULL DEFAULT 0,
                reinforcement_count INTEGER NOT NULL DEFAULT 0,
                author TEXT,
                metadata JSONB NOT NULL DEFAULT '{}',
                details JSONB,
                version INTEGER NOT NULL,
                keyword_context TEXT NOT NULL DEFAULT '',
                content_hash TEXT NOT NULL,
                keyword_text TEXT NOT NULL,
                tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', keyword_text)) STORED
            )""",
            "CREATE UNIQUE INDEX memories_seq ON memories (seq)",
            "CREATE INDEX memories_env_status ON memories (environment_id, status, layer)",
            "CREATE INDEX memories_env_updated ON memories (environment_id, updated_at)",
            "CREATE INDEX memories_env_created ON memories (environment_id, created_at)",
            "CREATE INDEX memories_tags ON memories USING gin (tags jsonb_path_ops)",
            "CREATE INDEX memories_tsv ON memories USING gin (tsv)",
            """CREATE TABLE memory_versions (
                memory_id TEXT NOT NULL,
                version INTEGER NOT NULL,
                action TEXT NOT NULL,
                at TIMESTAMPTZ NOT NULL,
                actor TEXT,
                reason TEXT NOT NULL DEFAULT '',
                snapshot JSONB NOT NULL,
                PRIMARY KEY (memory_id, version)
            )""",
            # one row per (memory, model). The vector column is untyped because each model has
            # its own dimension (kept in dim); HNSW indexes are per model, partial on model_id
            # over embedding::vector(dim), created when a model stores its first vector.
            """CREATE TABLE memory_vectors (
                memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                model_id TEXT NOT NULL,
                environment_id TEXT NOT NULL,
                content_hash TEXT NOT NULL,
                dim INTEGER NOT NULL,
                embedding VECTOR NOT NULL,
                PRIMARY KEY (memory_id, model_id)
            )""",
            "CREATE INDEX memory_vectors_model_env ON memory_vectors (model_id, environment_id)",
            # the HNSW index of each (model, dimension) that has vectors
            """CREATE TABLE vector_indexes (
                model_id TEXT NOT NULL,
                dim INTEGER NOT NULL,
                index_name TEXT NOT NULL UNIQUE,
                PRIMARY KEY (model_id, dim)
            )""",
        ),
    ),
    Migration(
        "0002_accounts_audit",
        (
            """CREATE TABLE users (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                created_at TIMESTAMPTZ NOT NULL,
                is_admin BOOLEAN NOT NULL DEFAULT false,
                password_hash TEXT
            )""",
            # only the HMAC-SHA256 digest of a token is stored, never the token
            """CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                prefix TEXT NOT NULL,
                digest TEXT NOT NULL UNIQUE,
                scopes JSONB NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                last_used_at TIMESTAMPTZ,
                revoked_at TIMESTAMPTZ,
                replaced_by TEXT
            )""",
            "CREATE INDEX api_keys_user ON api_keys (user_id)",
            # an environment's owner is environments.owner; this table holds everyone else
            """CREATE TABLE environment_members (
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                role TEXT NOT NULL,
                added_at TIMESTAMPTZ NOT NULL,
                added_by TEXT,
                PRIMARY KEY (environment_id, user_id)
            )""",
            "CREATE INDEX environment_members_user ON environment_members (user_id)",
            # append-only; outlives the environments it mentions. targets is a JSON array,
            # searched through its GIN index ('what happened to this memory')
            """CREATE TABLE audit_log (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                at TIMESTAMPTZ NOT NULL,
                user_id TEXT NOT NULL,
                key_id TEXT,
                interface TEXT NOT NULL,
                action TEXT NOT NULL,
                environment_id TEXT,
                targets JSONB NOT NULL DEFAULT '[]',
                before JSONB NOT NULL DEFAULT '{}',
                after JSONB NOT NULL DEFAULT '{}',
                details JSONB NOT NULL DEFAULT '{}'
            )""",
            "CREATE INDEX audit_log_at ON audit_log (at)",
            "CREATE INDEX audit_log_user ON audit_log (user_id, at)",
            "CREATE INDEX audit_log_env ON audit_log (environment_id, at)",
            "CREATE INDEX audit_log_targets ON audit_log USING gin (targets jsonb_path_ops)",
        ),
    ),
    Migration(
        "0003_soul",
        (
            # the global Soul has environment_id NULL (unique NULLS NOT DISTINCT, PostgreSQL 15+);
            # an environment's overrides, history and snapshots go with the environment
            """CREATE TABLE soul_blocks (
                owner TEXT NOT NULL,
                environment_id TEXT REFERENCES environments(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                section TEXT NOT NULL,
                mode TEXT NOT NULL,
                text TEXT NOT NULL,
                priority INTEGER,
                enabled BOOLEAN,
                custom BOOLEAN NOT NULL,
                version INTEGER NOT NULL,
                updated_at TIMESTAMPTZ,
                updated_by TEXT,
                UNIQUE NULLS NOT DISTINCT (owner, environment_id, name)
            )""",
            # append-only: one row per change, with the block's full state after it
            """CREATE TABLE soul_block_versions (
                owner TEXT NOT NULL,
                environment_id TEXT REFERENCES environments(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                version INTEGER NOT NULL,
                action TEXT NOT NULL,
                reason TEXT NOT NULL DEFAULT '',
                state JSONB NOT NULL,
                UNIQUE NULLS NOT DISTINCT (owner, environment_id, name, version)
            )""",
            """CREATE TABLE soul_snapshots (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                owner TEXT NOT NULL,
                environment_id TEXT REFERENCES environments(id) ON DELETE CASCADE,
                kind TEXT NOT NULL,
                label TEXT NOT NULL DEFAULT '',
                created_at TIMESTAMPTZ NOT NULL,
                actor TEXT,
                blocks JSONB NOT NULL
            )""",
            "CREATE INDEX soul_snapshots_layer ON soul_snapshots (owner, environment_id, seq)",
        ),
    ),
    Migration(
        "0004_lifecycle_review",
        (
            # pairs of memories the lifecycle could not decide about (see engram.lifecycle)
            """CREATE TABLE review_items (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                memory_id TEXT NOT NULL,
                other_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                reason TEXT NOT NULL DEFAULT '',
                similarity DOUBLE PRECISION NOT NULL DEFAULT 0,
                created_at TIMESTAMPTZ NOT NULL,
                status TEXT NOT NULL,
                resolved_at TIMESTAMPTZ,
                resolved_by TEXT
            )""",
            "CREATE INDEX review_items_env_status ON review_items (environment_id, status)",
        ),
    ),
    Migration(
        "0005_conversations",
        (
            # extracted_* record how far extraction has read (see ExtractionState)
            """CREATE TABLE conversations (
                id TEXT PRIMARY KEY,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                source TEXT NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                started_at TIMESTAMPTZ,
                created_at TIMESTAMPTZ NOT NULL,
                metadata JSONB NOT NULL DEFAULT '{}',
                extracted_position INTEGER NOT NULL DEFAULT 0,
                extracted_assistant INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX conversations_env ON conversations (environment_id, created_at)",
            # dedup_key (external id or content hash) makes re-delivery idempotent
            """CREATE TABLE conversation_messages (
                conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
                position INTEGER NOT NULL,
                id TEXT NOT NULL UNIQUE,
                role TEXT NOT NULL,
                author TEXT,
                content TEXT NOT NULL,
                created_at TIMESTAMPTZ,
                external_id TEXT,
                dedup_key TEXT NOT NULL,
                PRIMARY KEY (conversation_id, position),
                UNIQUE (conversation_id, dedup_key)
            )""",
        ),
    ),
    Migration(
        "0006_llm_providers",
        (
            # api_key is AES-256-GCM ciphertext; its key lives in a file outside the database
            """CREATE TABLE llm_providers (
                name TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                base_url TEXT NOT NULL,
                model TEXT NOT NULL,
                api_key BYTEA,
                timeout DOUBLE PRECISION NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
        ),
    ),
    Migration(
        "0007_memory_thread",
        (
            # the conversation or session a memory came from (search groups by it)
            "ALTER TABLE memories ADD COLUMN thread TEXT",
        ),
    ),
    Migration(
        "0008_audit_newest_first",
        (
            # 'newest N entries of a user or environment' walks these instead of sorting
            "DROP INDEX audit_log_user",
            "CREATE INDEX audit_log_user ON audit_log (user_id, seq)",
            "DROP INDEX audit_log_env",
            "CREATE INDEX audit_log_env ON audit_log (environment_id, seq)",
        ),
    ),
    Migration(
        "0009_tsv_no_pending_list",
        (
            # GIN's fast update queues new entries in a pending list that every search scans
            # until vacuum merges it: after a bulk load, 5 ms per keyword query at 10k memories.
            # Writes go straight into the index instead.
            "ALTER INDEX memories_tsv SET (fastupdate = off)",
            "SELECT gin_clean_pending_list('memories_tsv'::regclass)",
        ),
    ),
    Migration(
        "0010_conversation_owner",
        (
            # as SQLite's 0014_conversation_owner: caller ids are scoped per user
            "ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE conversations ADD COLUMN external_id TEXT",
            """UPDATE conversations c SET external_id = c.id, owner = e.owner
            FROM environments e WHERE e.id = c.environment_id""",
            "UPDATE conversations SET external_id = id WHERE external_id IS NULL",
            "CREATE UNIQUE INDEX conversations_owner_external "
            "ON conversations (owner, external_id)",
        ),
    ),
    Migration(
        "0011_idempotency_keys",
        (
            # one row per (user, Idempotency-Key): see engram.store.idempotency
            """CREATE TABLE idempotency_keys (
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                owner TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                executed SMALLINT NOT NULL DEFAULT 0,
                status INTEGER,
                content_type TEXT,
                body BYTEA,
                PRIMARY KEY (user_id, key)
            )""",
            "CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)",
        ),
    ),
    *LATER,
)


def _ensure_table(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "seq INTEGER GENERATED ALWAYS AS IDENTITY, "
        "name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )


def applied(conn: Connection) -> list[str]:
    """Names of the migrations recorded as applied, in order."""
    if not _exists(conn):
        return []
    return [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY seq")]


def _exists(conn: Connection) -> bool:
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    return bool(row and row[0])


def migrate(db: Database, migrations: tuple[Migration, ...] = MIGRATIONS) -> list[str]:
    """Apply every migration not yet recorded; return the names applied now."""
    ran: list[str] = []
    with db.advisory_lock(LOCK_NAME), db.connection() as conn:
        _ensure_table(conn)
        done = set(applied(conn))
        for migration in migrations:
            if migration.name in done:
                continue
            try:
                with conn.transaction():
                    for statement in migration.statements:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO schema_migrations (name) VALUES (%s)", (migration.name,)
                    )
            except psycopg.Error as exc:
                raise StorageError(f"migration {migration.name} failed: {exc}") from exc
            ran.append(migration.name)
    return ran
