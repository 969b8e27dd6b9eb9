from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.errors import StorageError
from engram.store import EmbeddingUpdate
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.migrations import MIGRATIONS, Migration, migrate
from tests.conftest import embed_randomly


def test_migrations_applied_once_and_recorded(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    names = [m.name for m in MIGRATIONS]
    assert store.applied_migrations() == names
    store.close()
    # reopening runs nothing again
    again = SQLiteStore(path)
    assert again.applied_migrations() == names
    again.close()
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn) == []
    rows = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
    assert rows == len(names)
    conn.close()


def test_failed_migration_rolls_back_and_can_be_rerun(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "f.db", isolation_level=None)
    broken = (
        Migration("0001_ok", ("CREATE TABLE a (x INTEGER)",)),
        Migration("0002_broken", ("CREATE TABLE b (y INTEGER)", "INSERT INTO nowhere VALUES (1)")),
    )
    with pytest.raises(StorageError, match="0002_broken"):
        migrate(conn, broken)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "a" in tables and "b" not in tables  # the broken one left nothing behind
    applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    assert applied == ["0001_ok"]
    fixed = (broken[0], Migration("0002_broken", ("CREATE TABLE b (y INTEGER)",)))
    assert migrate(conn, fixed) == ["0002_broken"]
    conn.close()


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="cannot open the database"):
        SQLiteStore(path)


def test_migration_names_are_numbered_in_order() -> None:
    # increasing and unique; numbers reserved by work merged later may leave a gap for now
    numbers = [int(m.name.split("_", 1)[0]) for m in MIGRATIONS]
    # strictly increasing; a number may be missing while a branch that holds it is unmerged
    assert numbers == sorted(set(numbers)) and numbers[0] == 1


def test_vectors_move_to_a_rowid_table_and_keep_every_row(tmp_path: Path) -> None:
    # a store written before 0027 kept its vectors in a WITHOUT ROWID table (each lookup by key
    # read every 1.5 KB row's overflow page); upgraded, the same rows in a rowid table
    path = tmp_path / "v.db"
    store = SQLiteStore(path)
    engram = Engram(store)
    env = engram.environments.create("e", LOCAL).id
    ids = [
        m.id
        for m in engram.memories.add_many(
            [NewMemory(content=f"m {i}") for i in range(20)], LOCAL, "e"
        )
    ]
    pending = {p.memory_id: p for p in store.pending_embeddings("m16", limit=100)}
    vectors = embed_randomly(store, "m16", ids, np.random.default_rng(1))
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(OLD_VECTORS)
    conn.execute("DELETE FROM schema_migrations WHERE name = '0027_memory_vectors_rowid'")
    old = conn.execute(ROWS).fetchall()
    assert "WITHOUT ROWID" in table_sql(conn, "memory_vectors") and len(old) == 20
    conn.close()

    store = SQLiteStore(path)  # migrates
    assert "0027_memory_vectors_rowid" in store.applied_migrations()
    conn = sqlite3.connect(path, isolation_level=None)
    assert "WITHOUT ROWID" not in table_sql(conn, "memory_vectors")
    assert conn.execute(ROWS).fetchall() == old
    indexes = {r[1] for r in conn.execute("PRAGMA index_list(memory_vectors)")}
    assert "memory_vectors_rev" in indexes
    conn.close()
    flt = MemoryFilter(environment_ids=[env])
    hits = store.vector_search(vectors[3], "m16", flt, limit=3)
    assert hits[0].memory_id == ids[3] and abs(hits[0].score - 1.0) < 1e-5
    # still one vector per memory and model: a second write replaces the first
    store.put_embeddings("m16", [EmbeddingUpdate(ids[3], pending[ids[3]].content_hash, vectors[4])])
    assert store.embedding_stats() == {"m16": 20}
    assert store.vector_scores(vectors[4], "m16", [ids[3]])[ids[3]] == pytest.approx(1.0)
    store.close()


ROWS = (
    "SELECT memory_seq, model_id, environment_id, content_hash, dim, vector, rev "
    "FROM memory_vectors ORDER BY memory_seq"
)
# the table as migration 0002 created it, under another name, then renamed in place
OLD_VECTORS = ";".join(
    (
        next(m for m in MIGRATIONS if m.name == "0002_vectors")
        .statements[0]
        .replace("memory_vectors", "old_vectors"),
        "INSERT INTO old_vectors SELECT * FROM memory_vectors",
        "DROP TABLE memory_vectors",
        "ALTER TABLE old_vectors RENAME TO memory_vectors",
        "CREATE INDEX memory_vectors_rev ON memory_vectors (model_id, rev)",
    )
)


def table_sql(conn: sqlite3.Connection, name: str) -> str:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return str(row[0])
