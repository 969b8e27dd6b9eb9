"""Run-once locks on SQLite: a row per held lock in ``run_locks``, taken inside the writer's
``BEGIN IMMEDIATE`` transaction, so at most one process (and one thread) holds each name.

A holder is ``host:pid:token``. A row left behind by a process that died on this host is taken
over; one from another host is respected (a SQLite file is not shared across machines).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.store.sqlite.db import SQLiteDatabase


def _alive(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True
    try:
        os.kill(int(pid_text), 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def run_exclusive(db: SQLiteDatabase, name: str) -> Iterator[bool]:
    """Hold ``name`` for the block; yields False at once (holding nothing) if it is taken."""
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    with db.tx() as conn:
        row = conn.execute("SELECT holder FROM run_locks WHERE name = ?", (name,)).fetchone()
        got = row is None or not _alive(row[0])
        if got:
            conn.execute(
                "INSERT OR REPLACE INTO run_locks (name, holder, acquired_at) VALUES (?, ?, ?)",
                (name, holder, time.time()),
            )
    try:
        yield got
    finally:
        if got:
            with db.tx() as conn:
                conn.execute("DELETE FROM run_locks WHERE name = ? AND holder = ?", (name, holder))
