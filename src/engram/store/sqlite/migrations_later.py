"""The SQLite migrations from coding-agent capture on (the list goes on from
:data:`engram.store.sqlite.migrations.MIGRATIONS`'s earlier ones, which end with it). Append new
ones here; never edit one that has shipped."""

from __future__ import annotations

from engram.store.sqlite import vector_table
from engram.store.sqlite.migration import Migration

LATER: tuple[Migration, ...] = (
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
    Migration(
        "0026_sign_in_failures",
        (
            # failed sign-ins in the counting window (engram.store.sign_ins), shared by every
            # server process: a time, a digest of the name as typed, the client address
            """CREATE TABLE sign_in_failures (
                at REAL NOT NULL,
                name TEXT NOT NULL,
                address TEXT NOT NULL
            )""",
            "CREATE INDEX sign_in_failures_at ON sign_in_failures (at)",
        ),
    ),
    # the vectors' table as a rowid table: see vector_table for why
    Migration("0027_memory_vectors_rowid", vector_table.ROWID_STATEMENTS),
    Migration(
        "0028_environment_stamp",
        (
            # moved by every change to an environment or its members, by any process or code
            # path (triggers): the environment cache of a write (Store.environment_stamp)
            "INSERT OR IGNORE INTO store_meta (key, value) VALUES ('environment_stamp', 0)",
            *(
                f"CREATE TRIGGER {table}_stamp_{event.lower()} AFTER {event} ON {table} BEGIN "
                "UPDATE store_meta SET value = value + 1 WHERE key = 'environment_stamp'; END"
                for table in ("environments", "environment_members")
                for event in ("INSERT", "UPDATE", "DELETE")
            ),
        ),
    ),
    Migration(
        "0029_memories_recorded_at",
        # when Engram first stored a memory (created_at is when it was said or true)
        ("ALTER TABLE memories ADD COLUMN recorded_at REAL",),
    ),
    Migration(
        "0030_memories_thread",
        # a conversation's memories (a thread filter; its earlier summaries, replaced by a
        # new one) without reading every memory of the environment
        ("CREATE INDEX memories_thread ON memories (environment_id, thread)",),
    ),
)
