"""``engram serve --workers 2``: real server processes over one store, on both backends. What
one worker writes, another finds at once by keyword and within seconds by meaning; a key
revoked through one is refused by the other; the write path's dedup sees the other worker's
facts; MCP over HTTP works whichever worker a request reaches; a SIGKILLed server leaves no
worker behind; the supervisor restarts a worker that dies."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.live_server import start_serve
from tests.pg_server import fresh_database

ENGRAM = [sys.executable, "-m", "engram"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Workers:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, token: str, log: Path) -> None:
        self.proc, self.url, self.token, self.log = proc, url, token, log

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60
        )

    @contextmanager
    def two_clients(self) -> Iterator[tuple[httpx.Client, httpx.Client]]:
        """Two keep-alive clients whose connections reached different workers."""
        with self.client() as first:
            pid = first.get("/healthz").json()["pid"]
            for _ in range(200):
                with self.client() as other:
                    if other.get("/healthz").json()["pid"] != pid:
                        yield first, other
                        return
        raise AssertionError("every connection reached the same worker")

    def pids(self) -> set[int]:
        out = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", str(self.proc.pid)], capture_output=True, text=True
        )
        return {int(p) for p in out.stdout.split()}


def start(home: Path, env: dict[str, str], log: Path, port: int) -> subprocess.Popen[bytes]:
    args = ["--port", str(port), "--workers", "2", "--maintenance-every", "0"]
    return start_serve(env, args, log, port)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(params=["sqlite", "postgres"], scope="module")
def workers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, model_cache: Path
) -> Iterator[Workers]:
    tmp = tmp_path_factory.mktemp(f"workers-{request.param}")
    home = tmp / "home"
    env = {**os.environ, "ENGRAM_HOME": str(home), "ENGRAM_MODEL_CACHE": str(model_cache),
           "ENGRAM_EMBEDDER": "default"}  # fmt: skip
    env.pop("ENGRAM_DATABASE_URL", None)
    with ExitStack() as stack:
        if request.param == "postgres":
            admin = request.getfixturevalue("pg_admin_url")
            env["ENGRAM_DATABASE_URL"] = stack.enter_context(fresh_database(admin, "workers_"))
        subprocess.run([*ENGRAM, "init"], env=env, check=True, capture_output=True, timeout=120)
        port, log = free_port(), tmp / "server.log"
        proc = start(home, env, log, port)
        try:
            token = (home / "token").read_text().strip()
            yield Workers(proc, f"http://127.0.0.1:{port}", token, log)
        finally:
            stop(proc)


def _search(client: httpx.Client, query: str, mode: str) -> list[str]:
    r = client.post("/api/v1/search", json={"query": query, "mode": mode, "limit": 5})
    assert r.status_code == 200, r.text
    return [item["memory"]["content"] for item in r.json()["items"]]


def test_two_workers_answer(workers: Workers) -> None:
    assert len(workers.pids()) == 2
    with workers.two_clients() as (a, b):
        assert {a.get("/healthz").json()["pid"], b.get("/healthz").json()["pid"]} == (
            workers.pids()
        )


def test_connections_opened_together_reach_both_workers(workers: Workers) -> None:
    """16 clients connecting at once (as a benchmark's or an agent fleet's do) are spread over
    the workers, not all accepted by the one that woke first."""
    host, port = workers.url.removeprefix("http://").split(":")
    socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(16)]
    pids = set()
    try:
        for s in socks:  # every connection is made before any request is sent
            s.sendall(
                f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
            )
        for s in socks:
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            pids.add(json.loads(answer.partition(b"\r\n\r\n")[2])["pid"])
    finally:
        for s in socks:
            s.close()
    assert pids == workers.pids()


def test_a_write_through_one_worker_is_found_through_the_other(workers: Workers) -> None:
    with workers.two_clients() as (a, b):
        assert _search(b, "zebra migration", "keyword") == []  # b's caches are warm now
        assert _search(b, "how do the striped horses travel", "semantic") is not None
        text = "The zebra herd migration crosses the river every Tuesday"
        made = a.post("/api/v1/facts", json={"content": text})
        assert made.status_code == 201, made.text
        assert _search(b, "zebra migration", "keyword") == [text]  # at once, by keyword
        deadline = time.monotonic() + 20
        while text not in _search(b, "when do the zebras migrate across the river", "semantic"):
            assert time.monotonic() < deadline, "never searchable by meaning through the other"
            time.sleep(0.2)
        # a delete through the other worker reaches the first one's vector index
        memory_id = made.json()["id"]
        assert b.delete(f"/api/v1/facts/{memory_id}").status_code == 200
        assert text not in _search(a, "when do the zebras migrate across the river", "semantic")
        assert _search(a, "zebra migration", "keyword") == []


def test_dedup_sees_the_other_workers_facts(workers: Workers) -> None:
    with workers.two_clients() as (a, b):
        for i in range(12):  # enough writes for b to build its index of facts
            r = b.post("/api/v1/facts", json={"content": f"Warm-up fact number {i} about kites"})
            assert r.status_code == 201, r.text
        text = "The lighthouse keeper paints the tower orange each spring"
        first = a.post("/api/v1/facts", json={"content": text})
        again = b.post("/api/v1/facts", json={"content": text})
        assert first.json()["outcome"]["action"] == "created"
        assert again.json()["outcome"]["action"] == "merged", again.text
        assert again.json()["id"] == first.json()["id"]


def test_a_key_revoked_through_one_worker_is_refused_by_the_other(workers: Workers) -> None:
    with workers.two_clients() as (a, b):
        made = a.post("/api/v1/keys", json={"name": "short-lived", "scopes": ["read"]})
        assert made.status_code == 201, made.text
        key = made.json()
        token = {"Authorization": f"Bearer {key['token']}"}
        assert b.get("/api/v1/environments", headers=token).status_code == 200
        assert b.delete(f"/api/v1/keys/{key['key']['id']}").status_code in (200, 204)
        assert a.get("/api/v1/environments", headers=token).status_code == 401


def test_mcp_over_http_whichever_worker_answers(workers: Workers) -> None:
    """Each MCP request may reach either worker (a new connection each time): stateless MCP
    answers every one."""
    headers = {
        "Authorization": f"Bearer {workers.token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}  # fmt: skip
    seen = set()
    for i in range(12):
        with httpx.Client(base_url=workers.url, headers=headers, timeout=60) as fresh:
            seen.add(fresh.get("/healthz").json()["pid"])
            r = fresh.post("/mcp", json=init)
            assert r.status_code == 200, r.text
            call = {"jsonrpc": "2.0", "id": 2 + i, "method": "tools/list", "params": {}}
            listed = fresh.post("/mcp", json=call)
            assert listed.status_code == 200, listed.text
            assert "remember" in listed.text
    assert len(seen) == 2 or len(workers.pids()) == 2


def test_a_worker_that_dies_is_started_again(workers: Workers) -> None:
    before = workers.pids()
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        now = workers.pids()
        if len(now) == 2 and victim not in now:
            break
        assert time.monotonic() < deadline, f"not restarted: {now}"
        time.sleep(0.1)
    with workers.client() as c:
        deadline = time.monotonic() + 60
        while c.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_killed_server_leaves_no_worker(tmp_path: Path, model_cache: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "ENGRAM_HOME": str(home), "ENGRAM_MODEL_CACHE": str(model_cache),
           "ENGRAM_EMBEDDER": "none"}  # fmt: skip
    env.pop("ENGRAM_DATABASE_URL", None)
    port = free_port()
    proc = start(home, env, tmp_path / "server.log", port)
    server = Workers(proc, f"http://127.0.0.1:{port}", "", tmp_path / "server.log")
    children = server.pids()
    assert len(children) == 2
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while any(Path(f"/proc/{pid}").exists() and _alive(pid) for pid in children):
        assert time.monotonic() < deadline, "a worker outlived its killed server"
        time.sleep(0.05)
    again = start(home, env, tmp_path / "server.log", port)  # the port is free again
    stop(again)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
