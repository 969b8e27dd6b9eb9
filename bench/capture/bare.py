"""The ingest baseline: the least a Python web server does per captured event, measured beside
``engram serve`` in the same run. A bare Starlette app on uvicorn with the same HTTP parser
(h11), one route that decodes the JSON body and inserts each event into SQLite (WAL,
``synchronous = NORMAL``, as Engram's store), one transaction per request, answering
``{"stored": n, "duplicates": d}``. No authentication, validation, scrubbing, sessions or
search index: a ceiling for one event per request, not a competitor.

    python -m bench.capture.bare --port PORT --db PATH
"""

from __future__ import annotations

import argparse
import json
import sqlite3

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def make_app(db: str) -> Starlette:
    conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS observations (key TEXT PRIMARY KEY, session TEXT, "
        "kind TEXT, at TEXT, text TEXT, command TEXT, output TEXT)"
    )

    async def events(request: Request) -> Response:
        body = json.loads(await request.body())
        stored = 0
        conn.execute("BEGIN")
        for e in body["events"]:
            cur = conn.execute(
                "INSERT OR IGNORE INTO observations VALUES (?, ?, ?, ?, ?, ?, ?)",
                (e["key"], e["session_id"], e["kind"], e["at"], e.get("text", ""),
                 e.get("command", ""), e.get("output", "")),
            )  # fmt: skip
            stored += cur.rowcount
        conn.execute("COMMIT")
        answer = {"stored": stored, "duplicates": len(body["events"]) - stored}
        return Response(json.dumps(answer), 202, media_type="application/json")

    return Starlette(routes=[Route("/api/v1/capture/events", events, methods=["POST"])])


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.capture.bare")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--db", required=True)
    args = ap.parse_args()
    uvicorn.run(
        make_app(args.db), host="127.0.0.1", port=args.port, http="h11", log_level="warning"
    )


if __name__ == "__main__":
    main()
