"""The PostgreSQL migrations from coding-agent capture on (the list goes on from
:data:`engram.store.postgres.migrations.MIGRATIONS`'s earlier ones, which end with it). Append new
ones here; never edit one that has shipped."""

from __future__ import annotations

from engram.store.postgres.migration import Migration

LATER: tuple[Migration, ...] = (
    Migration(
        "0014_capture",
        (
            # coding-agent sessions and their observations (engram.store.postgres.capture)
            """CREATE TABLE capture_sessions (
            id TEXT PRIMARY KEY,
            environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
            agent TEXT NOT NULL,
            session_id TEXT NOT NULL,
            cwd TEXT NOT NULL DEFAULT '',
            title TEXT NOT NULL DEFAULT '',
            started_at TIMESTAMPTZ NOT NULL,
            last_event_at TIMESTAMPTZ NOT NULL,
            ended_at TIMESTAMPTZ,
            events INTEGER NOT NULL DEFAULT 0,
            episode_id TEXT,
            summarized_at TIMESTAMPTZ
        )""",
            "CREATE INDEX capture_sessions_env ON capture_sessions (environment_id, last_event_at)",
            "CREATE INDEX capture_sessions_pending ON capture_sessions (last_event_at) "
            "WHERE summarized_at IS NULL OR summarized_at < last_event_at",
            """CREATE TABLE capture_observations (
            seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            session TEXT NOT NULL REFERENCES capture_sessions(id) ON DELETE CASCADE,
            environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
            agent TEXT NOT NULL,
            kind TEXT NOT NULL,
            at TIMESTAMPTZ NOT NULL,
            hook TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL DEFAULT '',
            tool TEXT NOT NULL DEFAULT '',
            command TEXT NOT NULL DEFAULT '',
            files TEXT NOT NULL DEFAULT '[]',
            output TEXT NOT NULL DEFAULT '',
            failed BOOLEAN NOT NULL DEFAULT false,
            detail TEXT NOT NULL DEFAULT '',
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text || ' ' || tool || ' ' ||
                command || ' ' || output)) STORED
        )""",
            "CREATE INDEX capture_observations_session ON capture_observations (session, seq)",
            "CREATE INDEX capture_observations_env ON capture_observations (environment_id)",
            "CREATE INDEX capture_observations_tsv ON capture_observations USING gin (tsv) "
            "WITH (fastupdate = off)",
        ),
    ),
    Migration(
        "0015_import_keys",
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
        "0016_memory_stamp",
        (
            "CREATE TABLE memory_stamp (id SMALLINT PRIMARY KEY, value BIGINT NOT NULL)",
            "INSERT INTO memory_stamp (id, value) VALUES (1, 0)",
        ),
    ),
    Migration(
        "0017_profile",
        (
            """CREATE TABLE profile_entries (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                text TEXT NOT NULL,
                projects TEXT NOT NULL DEFAULT '[]',
                stated_global BOOLEAN NOT NULL DEFAULT FALSE,
                created_at TIMESTAMPTZ NOT NULL,
                updated_at TIMESTAMPTZ NOT NULL,
                UNIQUE (user_id, key)
            )""",
            """CREATE TABLE profile_learning (
                user_id TEXT PRIMARY KEY,
                enabled BOOLEAN NOT NULL
            )""",
        ),
    ),
    Migration(
        "0018_oauth",
        (
            # Engram as the OAuth authorization server of /mcp: registered clients (RFC 7591),
            # grants (one user's consent to one client), and digests of codes and tokens
            """CREATE TABLE oauth_clients (
                client_id TEXT PRIMARY KEY,
                metadata TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
            """CREATE TABLE oauth_grants (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                client_id TEXT NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
                client_name TEXT NOT NULL,
                scopes TEXT NOT NULL,
                resource TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                revoked_at TIMESTAMPTZ
            )""",
            "CREATE INDEX oauth_grants_user ON oauth_grants (user_id, created_at)",
            """CREATE TABLE oauth_codes (
                digest TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
                code_challenge TEXT NOT NULL,
                redirect_uri TEXT NOT NULL,
                redirect_uri_explicit BOOLEAN NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                used_at TIMESTAMPTZ
            )""",
            """CREATE TABLE oauth_tokens (
                digest TEXT PRIMARY KEY,
                grant_id TEXT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
                kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
                scopes TEXT NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                used_at TIMESTAMPTZ
            )""",
            "CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)",
        ),
    ),
    Migration(
        "0019_handoffs",
        (
            # where one session's work stands, for the next to pick up (engram.store.handoffs)
            """CREATE TABLE handoffs (
                id TEXT PRIMARY KEY,
                owner TEXT NOT NULL,
                environment_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                summary TEXT NOT NULL,
                from_agent TEXT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                cwd TEXT NOT NULL DEFAULT '',
                open_questions TEXT NOT NULL DEFAULT '[]',
                next_steps TEXT NOT NULL DEFAULT '[]',
                files_touched TEXT NOT NULL DEFAULT '[]',
                for_agent TEXT,
                for_user TEXT,
                automatic BOOLEAN NOT NULL DEFAULT FALSE,
                source_session TEXT,
                state TEXT NOT NULL DEFAULT 'open',
                updated_at TIMESTAMPTZ,
                accepted_by TEXT,
                accepted_agent TEXT,
                accepted_session TEXT,
                accepted_at TIMESTAMPTZ
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
        "0020_web_sessions",
        (
            # the dashboard's browser sessions (engram.store.web_sessions): a digest of the
            # token, so a restart or another server process keeps everyone signed in
            """CREATE TABLE web_sessions (
                digest TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
                created_at TIMESTAMPTZ NOT NULL,
                expires_at TIMESTAMPTZ NOT NULL,
                environment TEXT
            )""",
            "CREATE INDEX web_sessions_user ON web_sessions (user_id)",
            "CREATE INDEX web_sessions_expiry ON web_sessions (expires_at)",
        ),
    ),
    Migration(
        "0021_oauth_clients_claimed",
        (
            # registration counts and cleans up the clients no grant names
            # (engram.store.oauth_registry)
            "CREATE INDEX oauth_grants_client ON oauth_grants (client_id)",
            "CREATE INDEX oauth_clients_created ON oauth_clients (created_at)",
        ),
    ),
    Migration(
        "0022_vector_index_state",
        (
            # 'deferred' while a bulk load stores vectors without the HNSW index (see hnsw.py)
            "ALTER TABLE vector_indexes ADD COLUMN state TEXT NOT NULL DEFAULT 'ready' "
            "CHECK (state IN ('ready', 'deferred'))",
        ),
    ),
    Migration(
        "0023_sign_in_failures",
        (
            # failed sign-ins in the counting window (engram.store.sign_ins), shared by every
            # server process: a time, a digest of the name as typed, the client address
            """CREATE TABLE sign_in_failures (
                at TIMESTAMPTZ NOT NULL,
                name TEXT NOT NULL,
                address TEXT NOT NULL
            )""",
            "CREATE INDEX sign_in_failures_at ON sign_in_failures (at)",
        ),
    ),
    Migration(
        "0024_vector_copy",
        (
            # each vector row names the transaction that last wrote it, so that an in-process
            # copy reads what its last snapshot did not see (store/postgres/vector_copy.py);
            # rows from before keep '1' (a copy loads them all at its first read)
            "ALTER TABLE memory_vectors ADD COLUMN writer xid8 NOT NULL DEFAULT '1'",
            "CREATE INDEX memory_vectors_writer ON memory_vectors (model_id, writer)",
            """CREATE FUNCTION engram_vector_written() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                NEW.writer := pg_current_xact_id();
                RETURN NEW;
            END $$""",
            "CREATE TRIGGER memory_vectors_written BEFORE INSERT OR UPDATE ON memory_vectors "
            "FOR EACH ROW EXECUTE FUNCTION engram_vector_written()",
            # a memory's environment, layer or status is kept beside its vectors in the copy
            """CREATE FUNCTION engram_memory_moved() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                UPDATE memory_vectors SET writer = pg_current_xact_id()
                WHERE memory_id = NEW.id;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER memories_moved AFTER UPDATE ON memories FOR EACH ROW "
            "WHEN (OLD.environment_id IS DISTINCT FROM NEW.environment_id "
            "OR OLD.layer IS DISTINCT FROM NEW.layer OR OLD.status IS DISTINCT FROM NEW.status) "
            "EXECUTE FUNCTION engram_memory_moved()",
            # deleted vectors: every copy loads again (bumped in the deleting transaction)
            """CREATE TABLE vector_epoch (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                value BIGINT NOT NULL
            )""",
            "INSERT INTO vector_epoch (id, value) VALUES (1, 0)",
            """CREATE FUNCTION engram_vectors_removed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM gone) THEN
                    UPDATE vector_epoch SET value = value + 1 WHERE id = 1;
                END IF;
                RETURN NULL;
            END $$""",
            "CREATE TRIGGER memory_vectors_removed AFTER DELETE ON memory_vectors "
            "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
            "EXECUTE FUNCTION engram_vectors_removed()",
            # nothing scans the HNSW indexes any more: they only slowed every insert
            """DO $$
            DECLARE r record;
            BEGIN
                FOR r IN SELECT index_name FROM vector_indexes LOOP
                    EXECUTE format('DROP INDEX IF EXISTS %I', r.index_name);
                END LOOP;
            END $$""",
            "DROP TABLE vector_indexes",
        ),
    ),
    Migration(
        "0025_memories_recorded_at",
        # when Engram first stored a memory (created_at is when it was said or true)
        ("ALTER TABLE memories ADD COLUMN recorded_at TIMESTAMPTZ",),
    ),
    Migration(
        "0026_memories_thread",
        # a conversation's memories (a thread filter; its earlier summaries, replaced by a
        # new one) without reading every memory of the environment
        ("CREATE INDEX memories_thread ON memories (environment_id, thread)",),
    ),
)
