"""The load generator of ``bench.server``: ``clients`` concurrent asyncio tasks over one httpx
client, each in a closed loop (send, wait for the answer, send the next), picking a write, a
search or a context assembly by weight. Runs in its own process, so the server's CPU is not the
client's; prints one JSON object of figures.

    python -m bench.server.load --url URL --token T --clients 16 --duration 20 [--kind engram]

``--kind baseline`` sends every request to the bare app's one route (bench.server.baseline).
A 429 is counted as shed (not an error) and its ``Retry-After`` honoured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.latency.__main__ import PEOPLE, sentence, vocabulary

MIX = {"write": 0.45, "search": 0.2, "context": 0.35}
"""The share of each operation in the engram load."""


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    shed: int = 0

    def ok(self, op: str, ms: float) -> None:
        self.latencies.setdefault(op, []).append(ms)

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0.0


def _request(op: str, rng: random.Random, vocab: list[str], kind: str) -> tuple[str, Any]:
    if kind == "baseline":
        # the query's one selective word: FTS5 finds and ranks its few rows (a query with a
        # word in every row, as "service" is, would rank all 10k)
        return "/op", {"content": sentence(rng, vocab), "query": rng.choice(vocab)}
    if op == "write":
        return "/api/v1/facts", {"content": sentence(rng, vocab)}
    if op == "search":
        return "/api/v1/search", {"query": _query(rng, vocab), "limit": 10}
    return "/api/v1/context/assemble", {"query": _query(rng, vocab), "max_tokens": 2000}


def _query(rng: random.Random, vocab: list[str]) -> str:
    return f"what does {rng.choice(PEOPLE)} think of the {rng.choice(vocab)} service"


async def _client(
    n: int,
    http: httpx.AsyncClient,
    tally: Tally,
    kind: str,
    start: float,
    stop: float,
    vocab: list[str],
) -> None:
    rng = random.Random(n)
    ops, weights = list(MIX), list(MIX.values())
    while (now := time.perf_counter()) < stop:
        op = "op" if kind == "baseline" else rng.choices(ops, weights)[0]
        path, body = _request(op, rng, vocab, kind)
        t = time.perf_counter()
        try:
            response = await http.post(path, json=body)
        except httpx.HTTPError as exc:
            if t >= start:
                tally.error(type(exc).__name__)
            continue
        done = time.perf_counter()
        counted = start <= t and done <= stop
        if response.status_code == 429:
            if counted:
                tally.shed += 1
            await asyncio.sleep(float(response.headers.get("retry-after", "1")))
        elif response.status_code >= 300:
            if counted:
                tally.error(f"{op} {response.status_code}")
        elif counted:
            tally.ok(op, (done - t) * 1000)
        del now


async def run(
    url: str, token: str, clients: int, duration: float, warmup: float, kind: str
) -> dict[str, Any]:
    vocab = vocabulary(random.Random(10_000))  # the seeded corpus's words: queries find things
    tally = Tally()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as http:
        start = time.perf_counter() + warmup
        stop = start + duration
        await asyncio.gather(
            *(_client(n, http, tally, kind, start, stop, vocab) for n in range(clients))
        )
    out: dict[str, Any] = {"clients": clients, "duration_s": duration}
    total = 0
    for op, lat in sorted(tally.latencies.items()):
        total += len(lat)
        out[op] = {
            "per_s": round(len(lat) / duration, 1),
            "p50_ms": round(pct(lat, 50), 1),
            "p95_ms": round(pct(lat, 95), 1),
            "p99_ms": round(pct(lat, 99), 1),
        }
    out["requests_per_s"] = round(total / duration, 1)
    out["errors"] = tally.errors
    out["shed_429"] = tally.shed
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.server.load", description=__doc__)
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", default="")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--kind", choices=("engram", "baseline"), default="engram")
    args = ap.parse_args(argv)
    figures = asyncio.run(
        run(args.url, args.token, args.clients, args.duration, args.warmup, args.kind)
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
