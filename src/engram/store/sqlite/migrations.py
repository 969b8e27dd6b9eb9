"""Named, append-only, transactional migrations of the SQLite store.

Each migration runs inside one ``BEGIN IMMEDIATE`` transaction together with the row that
records it in ``schema_migrations``; a failure rolls both back. Never edit a migration that has
shipped: append a new one.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.errors import StorageError
from engram.store.sqlite import fts, vector_table


@dataclass(frozen=True)
class Migration:
    name: str
    statements: tuple[str, ...]
    # a data step that needs Python (runs after the statements, in the same transaction)
    run: Callable[[sqlite3.Connection], None] | None = None


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
    Migration(
        "0003_accounts",
        (
            """CREATE TABLE users (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                created_at REAL NOT NULL,
                is_admin INTEGER NOT NULL DEFAULT 0,
                password_hash TEXT
            )""",
            # only the HMAC-SHA256 digest of a token is stored, never the token
            """CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                name TEXT NOT NULL,
                prefix TEXT NOT NULL,
                digest TEXT NOT NULL UNIQUE,
                scopes TEXT NOT NULL,
                created_at REAL NOT NULL,
                last_used_at REAL,
                revoked_at REAL,
                replaced_by TEXT
            )""",
            "CREATE INDEX api_keys_user ON api_keys (user_id)",
            # an environment's owner is environments.owner; this table holds everyone else
            """CREATE TABLE environment_members (
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                user_id TEXT NOT NULL,
                role TEXT NOT NULL,
                added_at REAL NOT NULL,
                added_by TEXT,
                PRIMARY KEY (environment_id, user_id)
            ) WITHOUT ROWID""",
            "CREATE INDEX environment_members_user ON environment_members (user_id)",
        ),
    ),
    Migration(
        "0004_audit",
        (
            """CREATE TABLE audit_log (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                at REAL NOT NULL,
                user_id TEXT NOT NULL,
                key_id TEXT,
                interface TEXT NOT NULL,
                action TEXT NOT NULL,
                environment_id TEXT,
                targets TEXT NOT NULL DEFAULT '[]',
                before TEXT NOT NULL DEFAULT '{}',
                after TEXT NOT NULL DEFAULT '{}',
                details TEXT NOT NULL DEFAULT '{}'
            )""",
            "CREATE INDEX audit_log_at ON audit_log (at)",
            "CREATE INDEX audit_log_user ON audit_log (user_id, at)",
            "CREATE INDEX audit_log_env ON audit_log (environment_id, at)",
            # one row per (entry, target) so 'what happened to this memory' is an index lookup
            """CREATE TABLE audit_targets (
                audit_seq INTEGER NOT NULL REFERENCES audit_log(seq),
                target TEXT NOT NULL,
                PRIMARY KEY (target, audit_seq)
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        "0005_keyword_context",
        (
            # extra text indexed for keyword search only (e.g. neighbouring conversation turns)
            "ALTER TABLE memories ADD COLUMN keyword_context TEXT NOT NULL DEFAULT ''",
        ),
    ),
    Migration(
        "0006_conversations",
        (
            # extracted_* record how far extraction has read (see ExtractionState)
            """CREATE TABLE conversations (
                id TEXT PRIMARY KEY,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                source TEXT NOT NULL,
                title TEXT NOT NULL DEFAULT '',
                started_at REAL,
                created_at REAL NOT NULL,
                metadata TEXT NOT NULL DEFAULT '{}',
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
                created_at REAL,
                external_id TEXT,
                dedup_key TEXT NOT NULL,
                PRIMARY KEY (conversation_id, position),
                UNIQUE (conversation_id, dedup_key)
            ) WITHOUT ROWID""",
        ),
    ),
    Migration(
        "0007_llm_providers",
        (
            # api_key is AES-256-GCM ciphertext; its key lives in a file outside the database
            """CREATE TABLE llm_providers (
                name TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                base_url TEXT NOT NULL,
                model TEXT NOT NULL,
                api_key BLOB,
                timeout REAL NOT NULL,
                created_at REAL NOT NULL
            )""",
        ),
    ),
    Migration(
        "0008_soul",
        (
            # the current state of each block in each layer ('' = the global Soul)
            """CREATE TABLE soul_blocks (
                owner TEXT NOT NULL,
                environment_id TEXT NOT NULL,
                name TEXT NOT NULL,
                section TEXT NOT NULL,
                mode TEXT NOT NULL,
                text TEXT NOT NULL,
                priority INTEGER,
                enabled INTEGER,
                custom INTEGER NOT NULL,
                version INTEGER NOT NULL,
                updated_at REAL,
                updated_by TEXT,
                PRIMARY KEY (owner, environment_id, name)
            ) WITHOUT ROWID""",
            # append-only: one row per change, with the block's full state after it
            """CREATE TABLE soul_block_versions (
                owner TEXT NOT NULL,
                environment_id TEXT NOT NULL,
                name TEXT NOT NULL,
                version INTEGER NOT NULL,
                action TEXT NOT NULL,
                reason TEXT NOT NULL DEFAULT '',
                state TEXT NOT NULL,
                PRIMARY KEY (owner, environment_id, name, version)
            ) WITHOUT ROWID""",
            """CREATE TABLE soul_snapshots (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                owner TEXT NOT NULL,
                environment_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                label TEXT NOT NULL DEFAULT '',
                created_at REAL NOT NULL,
                actor TEXT,
                blocks TEXT NOT NULL
            )""",
            "CREATE INDEX soul_snapshots_layer ON soul_snapshots (owner, environment_id, seq)",
            # an environment's overrides, their history and snapshots go with the environment
            """CREATE TRIGGER soul_environment_deleted AFTER DELETE ON environments BEGIN
                DELETE FROM soul_blocks WHERE environment_id = OLD.id;
                DELETE FROM soul_block_versions WHERE environment_id = OLD.id;
                DELETE FROM soul_snapshots WHERE environment_id = OLD.id;
            END""",
        ),
    ),
    Migration(
        "0009_lifecycle_review",
        (
            # pairs of memories the lifecycle could not decide about (see engram.lifecycle)
            """CREATE TABLE review_items (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                memory_id TEXT NOT NULL,
                other_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                reason TEXT NOT NULL DEFAULT '',
                similarity REAL NOT NULL DEFAULT 0,
                created_at REAL NOT NULL,
                status TEXT NOT NULL,
                resolved_at REAL,
                resolved_by TEXT
            )""",
            "CREATE INDEX review_items_env_status ON review_items (environment_id, status)",
        ),
    ),
    Migration(
        "0010_fts_scoped",
        fts.SCOPED_FTS_STATEMENTS,
        fts.reindex_all,
    ),
    Migration(
        "0011_run_locks",
        ("CREATE TABLE run_locks (name TEXT PRIMARY KEY, holder TEXT NOT NULL, acquired_at REAL)",),
    ),
    Migration(
        "0012_memory_thread",
        (
            # the conversation or session a memory came from (search groups by it)
            "ALTER TABLE memories ADD COLUMN thread TEXT",
        ),
    ),
    Migration(
        "0013_audit_newest_first",
        (
            # 'newest N entries of a user or environment' walks these (they end in the rowid,
            # seq) instead of reading and sorting all of that user's entries
            "DROP INDEX audit_log_user",
            "CREATE INDEX audit_log_user ON audit_log (user_id)",
            "DROP INDEX audit_log_env",
            "CREATE INDEX audit_log_env ON audit_log (environment_id)",
        ),
    ),
    Migration(
        "0014_conversation_owner",
        (
            # a caller's conversation id is theirs alone: (owner, external_id) is the key they
            # address it by; id is Engram's. Existing conversations keep their id, belong to
            # their environment's owner, and answer to it as their external id.
            "ALTER TABLE conversations ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE conversations ADD COLUMN external_id TEXT",
            """UPDATE conversations SET external_id = id, owner = coalesce(
                (SELECT owner FROM environments e WHERE e.id = conversations.environment_id), ''
            )""",
            "CREATE UNIQUE INDEX conversations_owner_external "
            "ON conversations (owner, external_id)",
        ),
    ),
    Migration(
        "0015_idempotency_keys",
        (
            # one row per (user, Idempotency-Key): see engram.store.idempotency
            """CREATE TABLE idempotency_keys (
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                owner TEXT NOT NULL,
                created_at REAL NOT NULL,
                executed INTEGER NOT NULL DEFAULT 0,
                status INTEGER,
                content_type TEXT,
                body BLOB,
                PRIMARY KEY (user_id, key)
            ) WITHOUT ROWID""",
            "CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)",
        ),
    ),
    Migration(
        "0018_capture",
        (
            # coding-agent sessions and their observations (engram.store.sqlite.capture)
            """CREATE TABLE capture_sessions (
            id TEXT PRIMARY KEY,
            environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
            agent TEXT NOT NULL,
            session_id TEXT NOT NULL,
            cwd TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            started_at REAL NOT NULL,
            last_event_at REAL NOT NULL,
            ended_at REAL,
            events INTEGER NOT NULL DEFAULT 0,
            episode_id TEXT,
            summarized_at REAL
        )""",
            "CREATE INDEX capture_sessions_env ON capture_sessions (environment_id, last_event_at)",
            # the idle sweep's question: sessions with events after their last summary
            "CREATE INDEX capture_sessions_pending ON capture_sessions (last_event_at) "
            "WHERE summarized_at IS NULL OR summarized_at < last_event_at",
            """CREATE TABLE capture_observations (
            seq INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            session TEXT NOT NULL REFERENCES capture_sessions(id) ON DELETE CASCADE,
            environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
            agent TEXT NOT NULL,
            kind TEXT NOT NULL,
            at REAL NOT NULL,
            hook TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL DEFAULT '',
            command TEXT NOT NULL DEFAULT '',
            files TEXT NOT NULL DEFAULT '[]',
            output TEXT NOT NULL DEFAULT '',
            failed INTEGER NOT NULL DEFAULT 0,
            detail TEXT NOT NULL DEFAULT ''
        )""",
            "CREATE INDEX capture_observations_session ON capture_observations (session, seq)",
            "CREATE INDEX capture_observations_env ON capture_observations (environment_id)",
            "CREATE VIRTUAL TABLE capture_fts USING fts5(text, tool, command, files, output, "
            "content='capture_observations', content_rowid='seq', tokenize='porter unicode61')",
            "CREATE TRIGGER capture_fts_insert AFTER INSERT ON capture_observations BEGIN "
            "INSERT INTO capture_fts (rowid, text, tool, command, files, output) "
            "VALUES (new.seq, new.text, new.tool, new.command, new.files, new.output); END",
            "CREATE TRIGGER capture_fts_delete AFTER DELETE ON capture_observations BEGIN "
            "INSERT INTO capture_fts (capture_fts, rowid, text, tool, command, files, output) "
            "VALUES ('delete', old.seq, old.text, old.tool, old.command, old.files, old.output); "
            "END",
        ),
    ),
    Migration(
        "0019_import_keys",
        (
            # what each import brought into an environment, by the item's key in its export
            """CREATE TABLE import_keys (
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                key TEXT NOT NULL,
                target TEXT NOT NULL,
                PRIMARY KEY (environment_id, key)
            )""",
            "CREATE INDEX import_keys_target ON import_keys (target)",
        ),
    ),
    Migration(
        "0020_memory_stamp",
        ("INSERT OR IGNORE INTO store_meta (key, value) VALUES ('memory_stamp', 0)",),
    ),
    Migration(
        "0021_profile",
        (
            """CREATE TABLE profile_entries (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                text TEXT NOT NULL,
                projects TEXT NOT NULL DEFAULT '[]',
                stated_global INTEGER NOT NULL DEFAULT 0,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                UNIQUE (user_id, key)
            )""",
            """CREATE TABLE profile_learning (
                user_id TEXT PRIMARY KEY,
                enabled INTEGER NOT NULL
            )""",
        ),
    ),
    Migration(
        "0022_oauth",
        (
            # Engram as the OAuth authorization server of /mcp: registered clients (RFC 7591),
            # grants (one user's consent to one client), and digests of codes and tokens
            """CREATE TABLE oauth_clients (
                client_id TEXT PRIMARY KEY,
                metadata TEXT NOT NULL,
                created_at REAL NOT NULL
            )""",
            """CREATE TABLE oauth_grants (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
                client_name TEXT NOT NULL,
                scopes TEXT NOT NULL,
                resource TEXT NOT NULL,
                created_at REAL NOT NULL,
                revoked_at REAL
            )""",
            "CREATE INDEX oauth_grants_user ON oauth_grants (user_id, created_at)",
            """CREATE TABLE oauth_codes (
                digest TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
                code_challenge TEXT NOT NULL,
                redirect_uri TEXT NOT NULL,
                redirect_uri_explicit INTEGER NOT NULL,
                expires_at REAL NOT NULL,
                used_at REAL
            )""",
            """CREATE TABLE oauth_tokens (
                digest TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
                scopes TEXT NOT NULL,
                expires_at REAL NOT NULL,
                used_at REAL
            )""",
            "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
        ),
    ),
    Migration(
        "0023_handoffs",
        (
            # where one session's work stands, for the next to pick up (engram.store.handoffs)
            """CREATE TABLE handoffs (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                summary TEXT NOT NULL,
                from_agent TEXT NOT NULL,
                created_at REAL NOT NULL,
                cwd TEXT NOT NULL DEFAULT '',
                open_questions TEXT NOT NULL DEFAULT '[]',
                next_steps TEXT NOT NULL DEFAULT '[]',
                files_touched TEXT NOT NULL DEFAULT '[]',
                for_agent TEXT,
                for_user TEXT,
                automatic INTEGER NOT NULL DEFAULT 0,
                source_session TEXT,
                state TEXT NOT NULL DEFAULT 'open',
                updated_at REAL,
                accepted_by TEXT,
                accepted_agent TEXT,
                accepted_session TEXT,
                accepted_at REAL
            )""",
            "CREATE INDEX handoffs_env_state ON handoffs (environment_id, state, created_at)",
            "CREATE INDEX handoffs_owner ON handoffs (owner, created_at)",
            "CREATE INDEX handoffs_for_user ON handoffs (for_user) WHERE for_user IS NOT NULL",
            "CREATE INDEX handoffs_accepted_session ON handoffs (accepted_session) "
            "WHERE accepted_session IS NOT NULL",
            # the user whose hooks captured a session: its automatic handoff is theirs
            "ALTER TABLE capture_sessions ADD COLUMN user_id TEXT NOT NULL DEFAULT ''",
        ),
    ),
    Migration(
        "0024_web_sessions",
        (
            # the dashboard's browser sessions (engram.store.web_sessions): a digest of the
            # token, so a restart or another server process keeps everyone signed in
            """CREATE TABLE web_sessions (
                digest TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                created_at REAL NOT NULL,
                expires_at REAL NOT NULL,
                environment TEXT
            )""",
            "CREATE INDEX web_sessions_user ON web_sessions (user_id)",
            "CREATE INDEX web_sessions_expiry ON web_sessions (expires_at)",
        ),
    ),
    Migration(
        "0025_oauth_clients_claimed",
        (
            # registration counts and cleans up the clients no grant names
            # (engram.store.oauth_registry)
            "CREATE INDEX oauth_grants_client ON oauth_grants (client_id)",
            "CREATE INDEX oauth_clients_created ON oauth_clients (created_at)",
        ),
    ),
    # the vectors' table as a rowid table: see vector_table for why
    Migration("0026_memory_vectors_rowid", vector_table.ROWID_STATEMENTS),
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
            if migration.run is not None:
                migration.run(conn)
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
