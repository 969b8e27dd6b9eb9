"""How a memory write lands in SQLite's rows: a new memory is one INSERT, a stored one an
UPDATE of the columns that changed alone; the keyword index (fts.py) is rewritten only when what
it holds of the row changed, and the in-memory vector copy (vectors.py) told of a change only
when its environment, layer or status changed; every version is appended."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import lru_cache

from engram.models import Memory
from engram.store.columns import MEMORY_FIELDS, USAGE_FIELDS
from engram.store.group_commit import WriteJob
from engram.store.protocol import Change
from engram.store.sqlite import fts
from engram.store.sqlite.audit import insert_audit
from engram.store.sqlite.idempotency import mark_executed
from engram.store.sqlite.rows import MEMORY_COLUMNS, inserted_rowid, memory_params

_PLACEHOLDERS = ",".join("?" * (len(MEMORY_FIELDS) + 1))
_INSERT = f"INSERT INTO memories ({MEMORY_COLUMNS}, content_hash) VALUES ({_PLACEHOLDERS})"
_UPSERT = (
    _INSERT
    + " ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(
        f"{c.strip()} = excluded.{c.strip()}"
        for c in (MEMORY_COLUMNS + ", content_hash").split(",")
        if c.strip() != "id" and c.strip() not in USAGE_FIELDS
    )
    + " RETURNING seq"
)


_STORED = (*MEMORY_FIELDS[1:], "content_hash")
"""The columns an update may change, in the order of :func:`memory_params` after the id."""
_PRIOR = (
    "SELECT m.seq, EXISTS (SELECT 1 FROM memory_vectors v WHERE v.memory_seq = m.seq), "
    + ", ".join(f"m.{c}" for c in _STORED)
    + " FROM memories m WHERE m.id = ?"
)
"""What a change to a stored memory must know of its row: where it is, whether it has vectors,
and what it holds (so that only the columns that change are written)."""
_USAGE = frozenset(_STORED.index(c) for c in USAGE_FIELDS)
_INDEXED = frozenset(
    _STORED.index(c) for c in ("content_hash", "keyword_context", "environment_id", "layer")
)
"""What the keyword index holds of a row: its search text (by its hash), context and scope."""
_COPIED = frozenset(_STORED.index(c) for c in ("environment_id", "layer", "status"))
"""What the in-memory copy of the vectors holds of a row besides its vector (a new text gets a
new vector from the indexer, which reaches the copy by itself)."""


@lru_cache(maxsize=256)
def _update(columns: tuple[int, ...]) -> str:
    """An UPDATE of these columns of :data:`_STORED` alone: an index over none of them (an
    environment's status list, its creation order, the ids) is not rewritten."""
    return (
        "UPDATE memories SET " + ", ".join(f"{_STORED[c]} = ?" for c in columns) + " WHERE seq = ?"
    )


def _bump_vectors(conn: sqlite3.Connection, seq: int) -> None:
    """A changed memory (status, layer...) must reach the in-memory vector index."""
    conn.execute(
        "UPDATE memory_vectors SET rev = (SELECT value + 1 FROM store_meta "
        "WHERE key = 'vector_rev') WHERE memory_seq = ?",
        (seq,),
    )
    conn.execute(
        "UPDATE store_meta SET value = value + 1 WHERE key = 'vector_rev' AND changes() > 0"
    )


def _final_states(changes: Sequence[Change]) -> list[tuple[Memory, bool]]:
    """Each memory a write changes, once, in its last state, and whether the write creates it
    (its first change here is version 1): a merge's new record is created and marked merged in
    one write, one row written instead of two (every version is still kept)."""
    out: dict[str, tuple[Memory, bool]] = {}
    for c in changes:
        first = out.get(c.memory.id)
        out[c.memory.id] = (c.memory, c.version.version == 1 if first is None else first[1])
    return list(out.values())


def apply_job(conn: sqlite3.Connection, job: WriteJob) -> None:
    """Write one job in the caller's transaction: its audit entries, each memory it changes
    (an insert, or an update of the changed columns alone, with the keyword index and the
    vector copy told only of what they hold) and every version."""
    mark_executed(conn, job.inflight)
    # one step per write() call, even when group commit shares the transaction
    conn.execute("UPDATE store_meta SET value = value + 1 WHERE key = 'memory_stamp'")
    insert_audit(conn, job.audit)
    for m, new in _final_states(job.changes):
        params = memory_params(m)
        prior = None if new else conn.execute(_PRIOR, (m.id,)).fetchone()
        if prior is not None:  # a stored memory changes: its row is updated in place
            seq, has_vectors, stored, now = prior[0], prior[1], prior[2:], params[1:]
            changed = tuple(
                c for c, value in enumerate(now) if stored[c] != value and c not in _USAGE
            )
            if changed:
                conn.execute(_update(changed), (*[now[c] for c in changed], seq))
            if not _INDEXED.isdisjoint(changed):
                fts.index(conn, seq, m)  # what the keyword index holds of it changed
            if has_vectors and not _COPIED.isdisjoint(changed):
                _bump_vectors(conn, seq)  # a merge's confidence is not the copy's to read
            continue
        if new:  # a plain INSERT (no RETURNING): an id already stored fails, a Conflict
            seq = inserted_rowid(conn.execute(_INSERT, params))
        else:
            seq = conn.execute(_UPSERT, params).fetchone()[0]
        fts.index(conn, seq, m, replace=not new)
        if not new:
            _bump_vectors(conn, seq)
    conn.executemany(
        "INSERT INTO memory_versions "
        "(memory_id, version, action, at, actor, reason, snapshot) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                v.memory_id,
                v.version,
                v.action.value,
                v.at.timestamp(),
                v.actor,
                v.reason,
                v.snapshot.model_dump_json(),
            )
            for v in (c.version for c in job.changes)
        ],
    )
