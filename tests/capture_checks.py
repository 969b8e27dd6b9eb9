"""Checks the capture tests share: every byte a store holds, the hook client run as a whole
process, and fake secrets of shapes the scrubber knows (spelled FAKE…)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engram.store import Store

HOOK = Path(sys.executable).parent / "engram-hook"
_PASSED_ON = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
PROMPT_SECRET = "sk-ant-api03-FAKEFAKEFAKEFAKEFAKEFAKE0123"
RESULT_SECRET = "ghp_FAKE0123456789abcdefghijklmnopqrstuv"


def stored_bytes(store: Store) -> bytes:
    """Everything the store holds, as bytes: the SQLite files (with the WAL) or every row of
    every PostgreSQL table as text."""
    path = getattr(store, "path", None) or getattr(getattr(store, "inner", None), "path", None)
    if path is not None:
        return b"".join(
            Path(f"{path}{suffix}").read_bytes()
            for suffix in ("", "-wal")
            if Path(f"{path}{suffix}").exists()
        )
    db = getattr(store, "db", None) or store.inner.db  # type: ignore[attr-defined]
    out = []
    with db.reader() as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchall()
        ]
        for table in tables:
            for row in conn.execute(f'SELECT t::text FROM "{table}" t').fetchall():
                out.append(row[0])
    return "\n".join(out).encode()


def files_bytes(directory: Path) -> bytes:
    """Every file under ``directory`` (spool, logs, transcripts)."""
    if not directory.exists():
        return b""
    return b"".join(p.read_bytes() for p in directory.rglob("*") if p.is_file())


def run_hook(
    agent: str, payload: dict[str, Any], env: dict[str, str], *, timeout: float = 30
) -> tuple[int, str]:
    """``engram-hook agent`` as a whole process: its exit code and stdout."""
    result = subprocess.run(
        [str(HOOK), agent],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        # PYTHONPATH passed on: the hook runs the code under test (a clone's src/ first)
        env={"PATH": os.environ.get("PATH", ""), **_PASSED_ON, **env},
        timeout=timeout,
    )
    return result.returncode, result.stdout
