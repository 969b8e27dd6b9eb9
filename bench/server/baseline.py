"""The baseline of ``bench.server``: a bare FastAPI app on one SQLite file (WAL), whose one
route does what a minimal memory server must: one insert into an FTS5 table and one BM25 query.

    python -m bench.server.baseline --db PATH --port PORT
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import threading
from pathlib import Path

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from engram.text import content_words


class Op(BaseModel):
    content: str
    query: str


def create(db: Path) -> None:
    """The table, seeded by the caller."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS t USING fts5(text, tokenize = 'porter')")
    conn.close()


def app(db: Path) -> FastAPI:
    api = FastAPI()
    local = threading.local()

    def conn() -> sqlite3.Connection:
        c: sqlite3.Connection | None = getattr(local, "conn", None)
        if c is None:
            c = local.conn = sqlite3.connect(db, isolation_level=None, timeout=30)
            c.execute("PRAGMA synchronous = NORMAL")
        return c

    @api.post("/op")
    def op(body: Op) -> dict[str, list[int]]:  # a sync route: FastAPI's threadpool, as engram's
        c = conn()
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO t (text) VALUES (?)", (body.content,))
        c.execute("COMMIT")
        q = " OR ".join(f'"{w}"' for w in dict.fromkeys(content_words(body.query))) or '""'
        rows = c.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank LIMIT 10", (q,))
        return {"ids": [r[0] for r in rows]}

    return api


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.server.baseline", description=__doc__)
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args(argv)
    uvicorn.run(app(args.db), host="127.0.0.1", port=args.port, log_config=None, access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
