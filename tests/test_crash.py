"""A writer killed with SIGKILL mid-stream loses none of the writes it had acknowledged."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from engram import LOCAL, Engram
from engram.store.sqlite import SQLiteStore

CHILD = """
import sys
from engram import LOCAL, Engram, NewMemory
from engram.store.sqlite import SQLiteStore, checkpoint

exec(sys.argv[2])  # the test's setup, if any
engram = Engram(SQLiteStore(sys.argv[1]))
i = 0
while True:
    m = engram.memories.add(NewMemory(content=f"crash test item {i}"), LOCAL)
    print(m.id, flush=True)  # acknowledged: the commit has returned
    i += 1
"""


def acknowledged_then_killed(db: Path, count: int, setup: str = "") -> list[str]:
    """Run a child writing memories one by one into ``db`` (after running ``setup``), SIGKILL
    it once it has acknowledged ``count`` writes; return the acknowledged ids."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), setup], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    acknowledged: list[str] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < count and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acknowledged.append(line.strip())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(acknowledged) >= count, "the child wrote too little before the deadline"
    return acknowledged


def test_sigkill_mid_stream_keeps_acknowledged_writes(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    acknowledged = acknowledged_then_killed(db, 300)

    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    store = SQLiteStore(db)
    found = {m.id for m in store.get(acknowledged)}
    assert found == set(acknowledged)
    # each acknowledged memory also has its version and its keyword-index entry
    engram = Engram(store)
    assert all(len(store.versions(i)) == 1 for i in acknowledged[-20:])
    assert engram.memories.list_memories(LOCAL).total >= len(acknowledged)
    store.close()
