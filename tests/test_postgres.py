"""What only the PostgreSQL store has: migrations coordinated by an advisory lock, per-model
vectors per model, the URL factory. (Behaviour shared with SQLite is tested on both backends.)"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from psycopg import sql

from engram import MemoryFilter
from engram.errors import StorageError
from engram.store import EmbeddingUpdate, open_store
from engram.store.postgres import PostgresStore
from engram.store.postgres.db import PostgresDatabase
from engram.store.postgres.migrations import MIGRATIONS, Migration, applied, migrate
from tests.pg_server import database_url


@pytest.fixture
def empty_url(pg_admin_url: str) -> Iterator[str]:
    """A database with no schema at all, dropped afterwards."""
    name = "engram_empty_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield database_url(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_concurrent_openers_apply_each_migration_once(empty_url: str) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            PostgresDatabase(empty_url, max_size=2).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with psycopg.connect(empty_url) as conn:
        rows = conn.execute("SELECT name FROM schema_migrations ORDER BY seq").fetchall()
    assert [r[0] for r in rows] == [m.name for m in MIGRATIONS]


def test_a_failed_migration_rolls_back_and_is_not_recorded(pg_url: str) -> None:
    db = PostgresDatabase(pg_url)
    try:
        bad = Migration("9999_bad", ("CREATE TABLE half_done (x int)", "SELECT * FROM missing"))
        with pytest.raises(StorageError, match="9999_bad"):
            migrate(db, (*MIGRATIONS, bad))
        with db.reader() as conn:
            assert "9999_bad" not in applied(conn)
            row = conn.execute("SELECT to_regclass('half_done')").fetchone()
            assert row is not None and row[0] is None
        assert migrate(db) == []  # nothing left to do on the good ones
    finally:
        db.close()


def test_advisory_lock_is_exclusive_across_connections(pg_url: str) -> None:
    a, b = PostgresDatabase(pg_url, migrate=False), PostgresDatabase(pg_url, migrate=False)
    try:
        with a.advisory_lock("maintenance") as got:
            assert got
            with b.advisory_lock("maintenance", wait=False) as other:
                assert not other
        with b.advisory_lock("maintenance", wait=False) as other:
            assert other
    finally:
        a.close()
        b.close()


def test_each_model_is_searched_apart_and_pruning_one_leaves_the_other(pg_url: str) -> None:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    try:
        with store.db.tx() as conn:
            conn.execute(
                "INSERT INTO environments (id, name, owner, created_at) VALUES "
                "('e', 'e', 'o', now())"
            )
            conn.execute(
                "INSERT INTO memories (id, environment_id, layer, status, category, content, "
                "importance, confidence, source, created_at, updated_at, version, content_hash, "
                "keyword_text) VALUES ('m', 'e', 'fact', 'active', 'general', 'x', 0.5, 0.8, "
                "'manual', now(), now(), 1, 'h', 'x')"
            )
        one = np.ones(8, dtype=np.float32) / np.sqrt(8)
        store.put_embeddings("a", [EmbeddingUpdate("m", "h", one)])
        store.put_embeddings("b", [EmbeddingUpdate("m", "h", one[:4] * np.sqrt(2))])

        flt = MemoryFilter(environment_ids=["e"])
        assert [h.memory_id for h in store.vector_search(one, "a", flt, limit=3)] == ["m"]
        assert [h.memory_id for h in store.vector_search(one[:4], "b", flt, limit=3)] == ["m"]
        assert store.vector_search(one[:4], "a", flt, limit=3) == []  # another dimension
        assert store.prune_embeddings("a") == 1
        assert store.vector_search(one[:4], "b", flt, limit=3) == []
        assert [h.memory_id for h in store.vector_search(one, "a", flt, limit=3)] == ["m"]
    finally:
        store.close()


def test_a_closed_store_refuses_work(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.embedding_stats()
