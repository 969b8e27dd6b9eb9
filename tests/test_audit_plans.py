"""'The newest entries of a user or an environment' must walk an index, not sort every entry of
that user (255 ms at 300k entries before migration 0013 / 0008)."""

from __future__ import annotations

from pathlib import Path

from engram.store.postgres import PostgresStore
from engram.store.sqlite import SQLiteStore

INDEXES = {"user_id": "audit_log_user", "environment_id": "audit_log_env"}


def test_sqlite_newest_entries_need_no_sort(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "a.db")
    conn = store.db.reader()
    for column in ("user_id", "environment_id"):
        plan = " ".join(
            str(r[3])
            for r in conn.execute(
                f"EXPLAIN QUERY PLAN SELECT a.seq FROM audit_log a WHERE a.{column} = ? "
                "ORDER BY a.seq DESC LIMIT 10",
                ("x",),
            )
        )
        assert INDEXES[column] in plan and "TEMP B-TREE" not in plan, plan
    store.close()


def test_postgres_newest_entries_need_no_sort(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with store.db.reader() as conn:
        conn.execute("SET enable_seqscan = off")  # an empty table: ask what the index can do
        for column in ("user_id", "environment_id"):
            plan = " ".join(
                str(r[0])
                for r in conn.execute(
                    f"EXPLAIN SELECT seq FROM audit_log WHERE {column} = 'x' "
                    "ORDER BY seq DESC LIMIT 10"
                )
            )
            assert INDEXES[column] in plan and "Sort" not in plan, plan
    store.close()
