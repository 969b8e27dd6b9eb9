"""Server benchmark: real ``engram serve`` processes under 1, 4, 16 and 64 concurrent HTTP
clients, beside a bare FastAPI + SQLite baseline measured in the same run.

    python -m bench.server [--memories 10000] [--clients 1,4,16,64] [--duration 20]
                           [--workers 1,0] [--profile DIR]
                           [--json PATH]

One environment is seeded with ``--memories`` synthetic memories (batched writes through the
service, then embedded), and copied afresh for each server configuration. The load generator
(bench.server.load) runs in its own process: asyncio tasks over httpx, each a closed loop of
writes (45 %), hybrid searches (20 %) and context assemblies at 2,000 tokens (35 %). Reported
per configuration and client count: requests/s and p50/p95/p99 of each operation, errors,
deliberate 429s, and the server's RSS (every worker process summed). Also: the seconds from
starting ``engram serve`` until it answers a semantic search with results (``ready_s``), and
the CPU seconds its processes used until then (``ready_cpu_s``: on a loaded machine the
wall-clock figure mostly measures the queue for a core); ``--ready-only N`` measures only
that, N times per configuration.

The baseline is a bare FastAPI app (bench.server.baseline) on one SQLite file whose one route
does one FTS5 insert and one BM25 query, under the same clients.

``--workers`` lists the server configurations (``engram serve --workers N``; 0: the default,
one per core). ``--profile DIR`` records a py-spy flame graph of every server process during
the 16-client level (needs ``pip install py-spy``).

Targets (16 clients): at least 150 context assemblies/s with p95 at most 100 ms while at least
200 writes/s continue; 16 clients give at least 1.8x the throughput of 1; no errors other than
deliberate 429s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.latency.__main__ import sentence, vocabulary
from bench.server import baseline

BIN = Path(sys.executable).parent
TARGETS = {"context_per_s": 150.0, "context_p95_ms": 100.0, "write_per_s": 200.0, "scaling": 1.8}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def texts(n: int) -> list[str]:
    rng = random.Random(n)
    vocab = vocabulary(random.Random(10_000))
    return [sentence(rng, vocab) for _ in range(n)]


def seed(home: Path, n: int, env: dict[str, str]) -> float:
    """``n`` memories in the owner's default environment, all embedded; returns seconds."""
    from engram import LOCAL, Engram, NewMemory, Settings
    from engram.cli.keys import bootstrap

    t = time.perf_counter()
    corpus = texts(n)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rng = random.Random(1)
    with Engram.open(Settings.load(home, env)) as engram:
        bootstrap(engram, home)
        engram.environments.ensure_default(LOCAL)
        for lo in range(0, n, 1000):
            batch = [
                NewMemory(
                    content=corpus[i],
                    importance=rng.random(),
                    created_at=start + timedelta(minutes=i),
                )
                for i in range(lo, min(n, lo + 1000))
            ]
            engram.memories.add_many(batch, LOCAL)
        engram.index_pending()
    return time.perf_counter() - t


def tree_rss_mib(pid: int) -> float:
    """RSS of a process and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return round(total / 1024, 1)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process and its descendants have used."""
    ticks = 0
    for p in tree_pids(pid):
        with suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
    return round(ticks / os.sysconf("SC_CLK_TCK"), 2)


def tree_pids(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


@contextmanager
def process(cmd: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT (a graceful stop), then SIGKILL after 30 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
        return
    proc.kill()
    proc.wait()


def wait_ready(url: str, token: str, proc: subprocess.Popen[bytes], semantic: bool) -> float:
    """Seconds until the server answers a semantic search with results (or, without
    ``semantic``, any request)."""
    t = time.perf_counter()
    body = {"query": "who deployed the service in Berlin", "mode": "semantic", "limit": 5}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers) as http:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            try:
                if semantic:
                    r = http.post("/api/v1/search", json=body, timeout=30)
                    if r.status_code == 200 and r.json()["items"]:
                        return time.perf_counter() - t
                else:
                    r = http.post("/op", json={"content": "warm", "query": "warm"}, timeout=30)
                    if r.status_code == 200:
                        return time.perf_counter() - t
            except httpx.HTTPError:
                pass
            if time.perf_counter() - t > 180:
                raise RuntimeError("the server was not ready in 180 s")
            time.sleep(0.02)


def load(url: str, token: str, clients: int, duration: float, kind: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.server.load", "--url", url, "--token", token,
         "--clients", str(clients), "--duration", str(duration), "--kind", kind],
        capture_output=True, check=True, text=True,
    )  # fmt: skip
    figures: dict[str, Any] = json.loads(out.stdout)
    return figures


@contextmanager
def profiling(pids: list[int], where: Path | None, duration: float) -> Iterator[None]:
    if where is None:
        yield
        return
    where.mkdir(parents=True, exist_ok=True)
    spies = []
    for i, p in enumerate(pids):
        cmd = [str(BIN / "py-spy"), "record", "--pid", str(p), "--duration", str(int(duration)),
               "--rate", "50", "--nonblocking", "--format", "speedscope",
               "--output", str(where / f"server-{i}.speedscope.json")]  # fmt: skip
        spies.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        yield
    finally:
        for spy in spies:
            spy.wait(timeout=duration + 60)


def run_levels(
    url: str,
    token: str,
    pid: int,
    args: argparse.Namespace,
    label: str,
    profile: Path | None,
) -> list[dict[str, Any]]:
    kind = "baseline" if label == "baseline" else "engram"
    levels = []
    for clients in args.clients:
        spy = profile / f"{label}-{clients}" if profile is not None and clients == 16 else None
        pids = [p for p in tree_pids(pid) if _is_python(p)]
        with profiling(pids, spy, args.duration + 2):
            figures = load(url, token, clients, args.duration, kind)
        figures["rss_mib"] = tree_rss_mib(pid)
        levels.append(figures)
        print(json.dumps({label: figures}), file=sys.stderr, flush=True)
    return levels


def _is_python(pid: int) -> bool:
    with suppress(OSError):
        return "python" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    return False


def run_baseline(tmp: Path, corpus: list[str], args: argparse.Namespace) -> dict[str, Any]:
    db = tmp / "baseline.db"
    baseline.create(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO t (text) VALUES (?)", [(x,) for x in corpus])
    conn.execute("COMMIT")
    conn.close()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "bench.server.baseline", "--db", str(db), "--port", str(port)]
    with process(cmd, dict(os.environ)) as proc:
        ready = wait_ready(url, "", proc, semantic=False)
        levels = run_levels(url, "", proc.pid, args, "baseline", None)
    return {"ready_s": round(ready, 2), "levels": levels}


def run_engram(
    seeded: Path, tmp: Path, workers: int, env: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    home = tmp / f"home-{workers}"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(seeded, home)
    token = (home / "token").read_text().strip()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(BIN / "engram"), "--home", str(home), "serve", "--port", str(port),
           "--maintenance-every", "0", "--log-level", "warning"]  # fmt: skip
    if workers != 1:
        cmd += ["--workers", str(workers)]
    with process(cmd, env) as proc:
        ready = wait_ready(url, token, proc, semantic=True)
        ready_cpu = tree_cpu_s(proc.pid)
        if args.ready_only:
            return {"workers": workers, "ready_s": round(ready, 2), "ready_cpu_s": ready_cpu}
        levels = run_levels(url, token, proc.pid, args, f"engram-w{workers}", args.profile)
    return {"workers": workers, "ready_s": round(ready, 2), "ready_cpu_s": ready_cpu,
            "levels": levels}  # fmt: skip


def run_ready(seeded: Path, tmp: Path, env: dict[str, str], args: argparse.Namespace) -> Any:
    """``--ready-only N``: N starts of each configuration, each figure and the medians."""
    out = []
    for workers in args.workers:
        starts = [run_engram(seeded, tmp, workers, env, args) for _ in range(args.ready_only)]
        out.append({
            "workers": workers,
            "ready_s": [r["ready_s"] for r in starts],
            "ready_cpu_s": [r["ready_cpu_s"] for r in starts],
            "median_ready_s": round(statistics.median(r["ready_s"] for r in starts), 2),
            "median_ready_cpu_s": round(statistics.median(r["ready_cpu_s"] for r in starts), 2),
        })  # fmt: skip
        shutil.rmtree(tmp / f"home-{workers}", ignore_errors=True)
    return out


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    by = {level["clients"]: level for level in result["levels"]}
    out: dict[str, Any] = {}
    if 16 in by:
        sixteen = by[16]
        context = sixteen.get("context", {})
        out["context_per_s"] = context.get("per_s", 0.0)
        out["context_p95_ms"] = context.get("p95_ms", 0.0)
        out["write_per_s"] = sixteen.get("write", {}).get("per_s", 0.0)
        if 1 in by and by[1]["requests_per_s"]:
            out["scaling_16_over_1"] = round(sixteen["requests_per_s"] / by[1]["requests_per_s"], 2)
    out["errors"] = sum(sum(level["errors"].values()) for level in result["levels"])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--clients", default="1,4,16,64", type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per client count")
    ap.add_argument(
        "--workers",
        default="1,0",
        type=lambda s: [int(x) for x in s.split(",")],
        help="server configurations: engram serve --workers N (0: one per core)",
    )
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument(
        "--ready-only",
        type=int,
        default=0,
        metavar="N",
        help="only start each configuration N times: seconds (and CPU seconds) until it "
        "answers a semantic search, with the medians",
    )
    ap.add_argument("--profile", type=Path, help="write py-spy profiles here (16 clients)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    results: dict[str, Any] = {"cores": os.cpu_count(), "load_before": os.getloadavg()[0],
                               "memories": args.memories, "targets": TARGETS}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="engram-bench-server-") as tmpdir:
        tmp = Path(tmpdir)
        env = {**os.environ, "ENGRAM_EMBEDDER": "default"}
        env.pop("ENGRAM_DATABASE_URL", None)  # the SQLite store of each copied home
        seeded = tmp / "seeded"
        results["seed_s"] = round(seed(seeded, args.memories, env), 1)
        if args.ready_only:
            results["ready"] = run_ready(seeded, tmp, env, args)
        elif not args.no_baseline:
            results["baseline"] = run_baseline(tmp, texts(args.memories), args)
        results["engram"] = []
        for workers in args.workers if not args.ready_only else ():
            result = run_engram(seeded, tmp, workers, env, args)
            result["verdict"] = verdict(result)
            results["engram"].append(result)
    results["load_after"] = os.getloadavg()[0]
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
