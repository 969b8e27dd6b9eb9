"""Clients that retry through the SDK, and a server SIGKILLed several times and restarted: not
one acknowledged write lost, not one stored twice (each write carries a unique marker).

A write whose answer was lost in a kill is retried with the same ``Idempotency-Key``: the
restarted server answers with the first answer (if it was kept), runs it (if it had changed
nothing) or refuses it as carried out. Without the keys the retries store duplicates."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from engram import NewMemory
from engram.errors import EngramError
from engram.sdk import Client, Retry
from tests.live_server import start_serve

ENGRAM = [sys.executable, "-m", "engram"]
WRITERS = 6
KILLS = 5
PER_KILL = 30
"""Writes acknowledged since the last restart before each kill (so that each hits writes)."""
ENOUGH = 250
"""Writes acknowledged in all before the test stops writing."""
MARKER = "crash-retry marker"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    return start_serve(env, ["--port", str(port)], log, port)


def test_sigkilled_server_with_retrying_clients(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "ENGRAM_HOME": str(home), "ENGRAM_MODEL_CACHE": str(model_cache)}
    subprocess.run([*ENGRAM, "init"], env=env, check=True, capture_output=True, timeout=120)
    token = (home / "token").read_text().strip()
    port = _free_port()
    log = tmp_path / "server.log"
    server = _start(env, port, log)

    acknowledged: list[str] = []
    refused: list[tuple[str, str]] = []  # marker, why
    lock = threading.Lock()
    stop = threading.Event()
    # long enough to span a restart: up to ~0.5 s between tries, 60 tries
    retry = Retry(attempts=60, backoff=0.05, max_backoff=0.5)

    def writer(n: int) -> None:
        with Client(f"http://127.0.0.1:{port}", token, retry=retry, timeout=10) as client:
            i = 0
            while not stop.is_set():
                marker = f"{MARKER} {n}-{i}"
                try:
                    client.facts.add(NewMemory(content=f"{marker} end"))
                except (EngramError, httpx.HTTPError) as exc:
                    with lock:
                        refused.append((marker, str(exc)))
                else:
                    with lock:
                        acknowledged.append(marker)
                i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()

    def acknowledged_after(count: int, deadline: float) -> None:
        # the machine's speed varies: wait for writes to be under way, not a fixed time
        while time.monotonic() < deadline:
            with lock:
                if len(acknowledged) >= count:
                    return
            time.sleep(0.05)

    try:
        for _ in range(KILLS):
            time.sleep(0.5)
            acknowledged_after(len(acknowledged) + PER_KILL, time.monotonic() + 30)
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
            server = _start(env, port, log)
        acknowledged_after(ENOUGH, time.monotonic() + 60)  # and after the last restart
    finally:
        stop.set()
        for t in threads:
            t.join(120)
        server.terminate()
        server.wait(30)
    assert not any(t.is_alive() for t in threads)

    conn = sqlite3.connect(home / "engram.db")
    stored = Counter(
        content.removesuffix(" end")
        for (content,) in conn.execute(
            "SELECT content FROM memories WHERE content LIKE ?", (MARKER + " %",)
        )
    )
    conn.close()
    carried_out = [m for m, why in refused if "was carried out" in why]
    other = [(m, why) for m, why in refused if "was carried out" not in why]

    assert len(acknowledged) >= ENOUGH, "too few writes to mean anything"
    assert other == [], other[:5]  # every failure was retried until it succeeded
    assert [m for m in acknowledged if stored[m] != 1] == []  # none lost, none twice
    assert [m for m in carried_out if stored[m] != 1] == []  # refused as done: stored once
    assert [m for m, count in stored.items() if count > 1] == []
    assert set(stored) == set(acknowledged) | set(carried_out)  # nothing stored unasked
