"""The audit log holds ids, versions, actions and actors, never memory text; a purge leaves the
purged text nowhere in the database (issue 13, finding 3).

SQLite is checked byte by byte (the database file and its WAL, after a checkpoint), PostgreSQL
row by row (every column of every table, as text)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engram import LOCAL, Engram
from engram.accounts import AuditQuery
from engram.lifecycle.report import WriteAction
from engram.models import NewMemory
from engram.store import Store
from engram.store.sqlite import SQLiteStore
from tests.sql import backend, query

KEPT = "The staging cluster runs Kubernetes 1.29 on bare metal in Frankfurt"
ABSORBED = "the staging cluster runs kubernetes 1.29 on bare metal in Frankfurt, per Qorvath"
OLD = "The release train for Qorvath leaves every Tuesday at 0930"
NEW = "The release train for Qorvath no longer leaves every Tuesday at 0930"


def _rows_mentioning(store: Store, text: str) -> list[str]:
    """Every table row (as text) that contains ``text``."""
    store = backend(store)
    if isinstance(store, SQLiteStore):
        tables = [r[0] for r in query(store, "SELECT name FROM sqlite_master WHERE type='table'")]
        found = []
        for t in tables:
            cols = [r[1] for r in query(store, f"PRAGMA table_info('{t}')")]
            if not cols:
                continue
            concat = " || ' ' || ".join(f"coalesce(CAST(\"{c}\" AS TEXT), '')" for c in cols)
            found += [
                t for _ in query(store, f'SELECT 1 FROM "{t}" WHERE instr({concat}, ?)', (text,))
            ]
        return found
    tables = [
        r[0]
        for r in query(store, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    ]
    found = []
    for t in tables:
        hits = query(store, f'SELECT 1 FROM "{t}" AS r WHERE strpos(r::text, ?) > 0', (text,))
        found += [t for _ in hits]
    return found


def _audit_text(engram: Engram) -> str:
    return " ".join(e.model_dump_json() for e in engram.audit.query(AuditQuery(limit=1000), LOCAL))


def test_merge_and_supersede_keep_text_out_of_the_audit_log(engram: Engram) -> None:
    engram.lifecycle.remember(NewMemory(content=KEPT), LOCAL)
    merged = engram.lifecycle.remember(NewMemory(content=ABSORBED), LOCAL)
    assert merged.action is WriteAction.MERGED, merged
    engram.lifecycle.remember(NewMemory(content=OLD), LOCAL)
    superseded = engram.lifecycle.remember(NewMemory(content=NEW), LOCAL)
    assert superseded.action is WriteAction.SUPERSEDED, superseded
    logged = _audit_text(engram)
    for text in (KEPT, ABSORBED, OLD, NEW, "Frankfurt", "Qorvath", "Tuesday"):
        assert text not in logged, text
    assert _rows_mentioning(engram.store, "Qorvath")  # the check does see stored text


def test_purge_leaves_the_text_nowhere(engram: Engram, tmp_path: Path) -> None:
    kept = engram.lifecycle.remember(NewMemory(content=KEPT), LOCAL).memory
    merged = engram.lifecycle.remember(NewMemory(content=ABSORBED), LOCAL)
    assert merged.action is WriteAction.MERGED and merged.merged_record is not None
    old = engram.lifecycle.remember(NewMemory(content=OLD), LOCAL).memory
    engram.lifecycle.remember(NewMemory(content=NEW), LOCAL)
    assert _rows_mentioning(engram.store, ABSORBED)
    engram.memories.purge([merged.merged_record, old.id], LOCAL)
    assert engram.memories.get(kept.id, LOCAL).content == KEPT
    for text in (ABSORBED, OLD):
        assert _rows_mentioning(engram.store, text) == [], text
    raw_store = backend(engram.store)
    if isinstance(raw_store, SQLiteStore):
        path = raw_store.path
        with sqlite3.connect(path) as raw:  # fold the WAL into the file, as a checkpoint does
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ("", "-wal"):
            file = Path(f"{path}{suffix}")
            data = file.read_bytes() if file.exists() else b""
            for text in (ABSORBED, OLD):
                assert text.encode() not in data, (suffix, text)
