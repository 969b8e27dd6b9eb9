from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engram.errors import StorageError
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.migrations import MIGRATIONS, Migration, migrate


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
