"""Capture benchmark: the hook path as users run it, with a real ``engram serve`` process.

    python -m bench.capture [--quick] [--json PATH]

Reported (targets in brackets):

- hook latency as a whole process, p50/p95 wall and median CPU, with the server up and with
  it down (spooling) [p95 <= 150 ms], for a tool result and for a session start (which waits
  for the context block): the hook as ``engram hooks install`` wires it (this Python with
  ``-I -S`` on the launcher) and the ``engram-hook`` script, in turn with the bare interpreter
  (``python -c pass``, ``python -I -S -c pass``) in the same run, so the figures read against a
  baseline whatever the machine's load (CPU from ``getrusage`` of each finished child);
- sustained events/s the server stores from concurrent sessions posting one event per
  request, and with 10 events per request (a hook delivering its spool) [>= 1,000/s], beside
  a bare Starlette app doing one SQLite insert per request (``bench.capture.bare``) in the
  same run;
- scrubbing cost per KB (the hook's ``clean``: scrub + bound);
- disk per 10,000 observations (SQLite file and WAL, realistic sizes);
- server RSS after the load;
- SIGKILL of the server while hooks are firing, a restart and ``engram hooks flush``: events
  lost and duplicated [0 and 0].
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shlex
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
HOOK = BIN / "engram-hook"
ENGRAM = BIN / "engram"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _wait_for(proc: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start") from None
            time.sleep(0.1)


@contextmanager
def server(home: Path, port: int, embedder: str) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "ENGRAM_EMBEDDER": embedder}
    proc = subprocess.Popen(
        [
            str(ENGRAM),
            "--home",
            str(home),
            "serve",
            "--port",
            str(port),
            "--maintenance-every",
            "0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(proc, port)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _payload(repo: Path, event: str, session: str) -> dict[str, Any]:
    base = {"session_id": session, "cwd": str(repo), "transcript_path": "/t.jsonl"}
    if event == "SessionStart":
        return {**base, "hook_event_name": "SessionStart", "source": "startup"}
    return {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q tests/"},
        "tool_response": {"stdout": "collected 120 items\n" + "." * 1200, "exit_code": 0},
    }


def _run_once(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """One whole process: (wall ms, CPU ms: user + system, from getrusage of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def hook_latency(
    commands: dict[str, list[str]], env: dict[str, str], payload: bytes, runs: int
) -> dict[str, dict[str, float]]:
    """Each command ``runs`` times, in turn (A B C A B C …, so that a change of the machine's
    load touches all alike): p50/p95 wall and the median CPU, in ms."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            wall, cpu = _run_once(argv, payload, env)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {
        name: {
            "p50_ms": round(_pct(walls[name], 0.5), 1),
            "p95_ms": round(_pct(walls[name], 0.95), 1),
            "cpu_ms": round(statistics.median(cpus[name]), 1),
        }
        for name in commands
    }


def hook_commands(with_script: bool) -> dict[str, list[str]]:
    from engram.hooks.install import hook_executable

    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -I -S -c pass": [sys.executable, "-I", "-S", "-c", "pass"],
        "hook (as installed)": [*shlex.split(hook_executable()), "claude"],
    }
    if with_script:
        commands["engram-hook script"] = [str(HOOK), "claude"]
    return commands


@contextmanager
def bare_server(tmp: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.capture.bare", "--port", str(port), "--db",
         str(tmp / "bare.db")],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_for(proc, port)
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _event(i: int, session: str, repo: Path) -> dict[str, Any]:
    return {
        "agent": "claude",
        "kind": "tool_result" if i % 4 else "prompt",
        "session_id": session,
        "cwd": str(repo),
        "project": "bench",
        "at": "2026-12-01T10:00:00Z",
        "key": f"bench-{uuid.uuid4().hex}",
        "text": "" if i % 4 else "Please refactor the upload module and keep the API. " * 8,
        "tool": "Bash",
        "command": f"pytest -q tests/test_{i % 50}.py",
        "output": ("collected 12 items\n" + "." * 40 + "\n") * 30 if i % 4 else "",
    }


def ingest_rate(
    url: str, token: str, repo: Path, sessions: int, per_session: int, batch: int
) -> dict[str, float]:
    host, port = url.split("//")[1].split(":")

    def one_session(s: int) -> int:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        stored = 0
        for start in range(0, per_session, batch):
            events = [_event(i, f"load-{s}", repo) for i in range(start, start + batch)]
            while True:
                conn.request(
                    "POST", "/api/v1/capture/events", json.dumps({"events": events}), headers
                )
                response = conn.getresponse()
                answer = response.read()
                if response.status != 429:
                    break
                time.sleep(0.05)  # shed: retry later, as the hook's spool does
            stored += json.loads(answer)["stored"]
        conn.close()
        return stored

    t0 = time.perf_counter()
    with ThreadPoolExecutor(sessions) as pool:
        stored = sum(pool.map(one_session, range(sessions)))
    took = time.perf_counter() - t0
    return {"events": stored, "seconds": round(took, 2), "events_per_s": round(stored / took)}


def scrub_cost() -> dict[str, float]:
    from engram.capture.privacy import clean

    chunk = (
        "Ran the migration; see https://ci.example.com/build/4411 for logs. The deploy key "
        "ghp_FAKE0123456789abcdefghijklmnopqrstuv was rotated and AWS AKIAFAKEFAKEFAKE1234 "
        "removed. Everything else is ordinary prose about tests and files in src/engram. "
    )
    text = (chunk * 14)[:2048]
    clean(text, 1 << 20)  # compile the patterns once
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        clean(text, 1 << 20)
    us_per_kb = (time.perf_counter() - t0) / n / 2 * 1e6
    return {"us_per_kb": round(us_per_kb, 1)}


def disk_per_10k(home: Path, before: int, stored: int) -> dict[str, float]:
    db = home / "engram.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = sum(p.stat().st_size for p in home.glob("engram.db*"))
    return {"mib_per_10k": round((size - before) / stored * 10_000 / 2**20, 1)}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def kill_test(
    home: Path, port: int, embedder: str, env: dict[str, str], repo: Path
) -> dict[str, int]:
    """Hooks fire from 4 sessions while the server is SIGKILLed and restarted; afterwards the
    spools are flushed. Counts each key sent against what the database holds."""
    sent: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def fire(worker: int) -> None:
        # each worker is a machine of its own: its own spool
        wenv = {**env, "ENGRAM_HOME": str(home), "ENGRAM_HOOK_TIMEOUT": "2"}
        spool_home = home.parent / f"client-{worker}"
        spool_home.mkdir(exist_ok=True)
        shutil.copy(home / "token", spool_home / "token")
        wenv["ENGRAM_HOME"] = str(spool_home)
        i = 0
        while not stop.is_set():
            prompt = f"kill-test {worker}-{i}"
            payload = {"session_id": f"kill-{worker}", "cwd": str(repo),
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt}  # fmt: skip
            subprocess.run([str(HOOK), "claude"], input=json.dumps(payload).encode(), env=wenv,
                           capture_output=True)  # fmt: skip
            with lock:
                sent.append(prompt)
            i += 1

    workers = [threading.Thread(target=fire, args=(w,)) for w in range(4)]
    with server(home, port, embedder) as proc:
        for w in workers:
            w.start()
        time.sleep(4)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(2)  # hooks fire against a dead server: they spool
    with server(home, port, embedder):
        time.sleep(2)
        stop.set()
        for w in workers:
            w.join()
        flushed = []
        for n in range(4):
            out = subprocess.run(
                [str(ENGRAM), "--home", str(home.parent / f"client-{n}"), "hooks", "flush"],
                env={**env, "ENGRAM_URL": f"http://127.0.0.1:{port}"},
                capture_output=True,
                text=True,
            )
            flushed.append((out.stdout + out.stderr).strip()[-200:])
    with sqlite3.connect(home / "engram.db") as conn:
        rows = conn.execute(
            "SELECT text FROM capture_observations WHERE text LIKE 'kill-test %'"
        ).fetchall()
    texts = [r[0] for r in rows]
    lost = sorted(set(sent) - set(texts))
    result: dict[str, Any] = {
        "sent": len(sent),
        "stored": len(set(texts)),
        "lost": len(lost),
        "duplicated": len(texts) - len(set(texts)),
    }
    if lost:  # what the hooks and the flushes said, to see why
        logs = [home.parent / f"client-{n}" / "hooks" / "hook.log" for n in range(4)]
        said = [ln for p in logs if p.exists() for ln in p.read_text().splitlines()]
        result["lost_examples"] = lost[:5]
        result["hook_log_not_spooling"] = [ln for ln in said if "spooled" not in ln][:10]
        result["flush"] = flushed
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.capture", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="fewer runs (a smoke test)")
    ap.add_argument("--embedder", default="none", help="ENGRAM_EMBEDDER of the server")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    runs = 15 if args.quick else 40
    results: dict[str, Any] = {"cores": os.cpu_count(), "embedder": args.embedder}
    results["load_average_at_start"] = [round(x, 1) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="engram-bench-capture-") as tmpdir:
        tmp = Path(tmpdir)
        home = tmp / "server"
        repo = tmp / "bench"
        (repo / ".git").mkdir(parents=True)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        hook_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp),
                    "ENGRAM_HOME": str(home), "ENGRAM_URL": url}  # fmt: skip
        tool = json.dumps(_payload(repo, "PostToolUse", "lat-tool")).encode()
        start = json.dumps(_payload(repo, "SessionStart", "lat-start")).encode()
        with server(home, port, args.embedder) as proc:
            token = (home / "token").read_text().strip()
            hook_latency(hook_commands(False), hook_env, start, 2)  # the server's first request
            results["hook_up"] = hook_latency(hook_commands(True), hook_env, tool, runs)
            results["hook_up_session_start"] = hook_latency(
                hook_commands(False), hook_env, start, runs
            )
            base = sum(p.stat().st_size for p in home.glob("engram.db*"))
            n_sessions, per = (8, 100) if args.quick else (16, 625)
            results["ingest_1_per_request"] = ingest_rate(url, token, repo, n_sessions, per, 1)
            results["ingest_10_per_request"] = ingest_rate(
                url, token, repo, n_sessions, per * 2, 10
            )
            stored = (
                results["ingest_1_per_request"]["events"]
                + results["ingest_10_per_request"]["events"]
            )
            results["server_rss_mib"] = rss_mib(proc.pid)
        bare_port = _free_port()
        with bare_server(tmp, bare_port):
            results["ingest_baseline_bare_starlette_1_per_request"] = ingest_rate(
                f"http://127.0.0.1:{bare_port}", "", repo, n_sessions, per, 1
            )
        results["disk"] = disk_per_10k(home, base, stored)
        down_env = {**hook_env, "ENGRAM_URL": f"http://127.0.0.1:{_free_port()}",
                    "ENGRAM_HOME": str(tmp / "offline")}  # fmt: skip
        (tmp / "offline").mkdir()
        shutil.copy(home / "token", tmp / "offline" / "token")
        results["hook_down"] = hook_latency(hook_commands(True), down_env, tool, runs)
        results["hook_down_session_start"] = hook_latency(
            hook_commands(False), down_env, start, runs
        )
        results["scrub"] = scrub_cost()
        results["sigkill"] = kill_test(home, port, args.embedder, hook_env, repo)
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
