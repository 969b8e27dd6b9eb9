"""Many server processes on one PostgreSQL: 4 ``engram serve`` subprocesses, 32 client threads
writing, searching and running maintenance for a bounded time. Checks: no 5xx, every
acknowledged write stored exactly once, and maintenance runs never overlapping (each run is
audited with its start and end; a request made during a run gets 409)."""

from __future__ import annotations

import itertools
import os
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import psycopg
import pytest

from engram.embeddings.static import StaticEmbedder

SERVERS = 4
CLIENTS = 32
ENVIRONMENTS = 4  # maintenance is one run per environment at a time
SECONDS = 15.0
ENGRAM = [sys.executable, "-m", "engram"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def servers(
    pg_url: str, tmp_path: Path, model_cache: Path, default_embedder: StaticEmbedder
) -> Iterator[tuple[list[str], str]]:
    """URLs of the running servers and the owner token."""
    home = tmp_path / "home"
    env = {
        **os.environ,
        "ENGRAM_HOME": str(home),
        "ENGRAM_DATABASE_URL": pg_url,
        "ENGRAM_MODEL_CACHE": str(model_cache),  # distilled already (default_embedder)
    }
    subprocess.run([*ENGRAM, "init"], env=env, check=True, capture_output=True, timeout=60)
    token = (home / "token").read_text().strip()
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for i in range(SERVERS):
            port = _free_port()
            log = (tmp_path / f"server-{i}.log").open("wb")
            procs.append(
                subprocess.Popen(
                    [*ENGRAM, "serve", "--port", str(port), "--log-level", "warning"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            urls.append(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 120  # four servers starting at once on 2 cores
        for url, proc in zip(urls, procs, strict=True):
            while True:
                assert proc.poll() is None, f"server {url} exited"
                assert time.monotonic() < deadline, f"server {url} did not start"
                try:
                    if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        yield urls, token
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.slow
def test_four_servers_on_one_postgres(servers: tuple[list[str], str], pg_url: str) -> None:
    urls, token = servers
    auth = {"Authorization": f"Bearer {token}"}
    envs = [
        httpx.post(
            f"{urls[0]}/api/v1/environments", json={"name": f"load{i}"}, headers=auth, timeout=60
        )
        .raise_for_status()
        .json()["id"]
        for i in range(ENVIRONMENTS)
    ]
    acked: dict[str, str] = {}  # memory id -> content sent
    statuses: Counter[tuple[str, int]] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + SECONDS
    # on a loaded machine keep going (up to a cap) until enough writes have crossed the servers:
    # this test is about correctness under concurrency, not throughput
    hard_stop = stop + 90

    def running() -> bool:
        now = time.monotonic()
        return now < stop or (len(acked) <= 100 and now < hard_stop)

    def client(n: int) -> None:
        rng = random.Random(n)
        env = envs[n % ENVIRONMENTS]
        clients = [httpx.Client(base_url=u, headers=auth, timeout=60) for u in urls]
        try:
            i = 0
            while running():
                c = rng.choice(clients)
                kind = ("write", "write", "write", "write", "search", "search", "maintain")[i % 7]
                i += 1
                try:
                    if kind == "write":
                        words = " ".join(uuid.uuid4().hex[:10] for _ in range(3))
                        content = f"client{n} note{i} {words}"
                        r = c.post(
                            "/api/v1/facts", json={"content": content}, params={"environment": env}
                        )
                        if r.status_code == 201:
                            with lock:
                                acked[r.json()["id"]] = content
                    elif kind == "search":
                        body = {"query": f"client{n} note", "environment": env, "limit": 5}
                        r = c.post("/api/v1/search", json=body)
                    else:
                        r = c.post("/api/v1/maintenance", json={"environment": rng.choice(envs)})
                except httpx.HTTPError as exc:
                    with lock:
                        errors.append(f"{kind}: {exc!r}")
                    continue
                with lock:
                    statuses[(kind, r.status_code)] += 1
        finally:
            for c in clients:
                c.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 150)
    assert not any(t.is_alive() for t in threads)

    print(f"\n{len(urls)} servers, {CLIENTS} clients, {SECONDS:.0f} s: {dict(statuses)}")
    assert errors == []
    assert {k: v for k, v in statuses.items() if k[1] >= 500} == {}
    assert set(statuses) <= {("write", 201), ("search", 200), ("maintain", 200), ("maintain", 409)}
    assert statuses[("write", 201)] == len(acked) > 100
    assert statuses[("maintain", 200)] >= 1

    with psycopg.connect(pg_url) as conn:
        # every acknowledged write is stored exactly once, created once, with what was sent
        created = conn.execute(
            "SELECT memory_id, snapshot->>'content' FROM memory_versions WHERE action = 'create'"
        ).fetchall()
        rows = conn.execute("SELECT id FROM memories").fetchall()
        runs = conn.execute(
            "SELECT environment_id, details->>'started_at', details->>'finished_at' FROM audit_log "
            "WHERE action = 'maintenance.run'"
        ).fetchall()
    probes = {mid: content for mid, content in created if content.startswith("client")}
    assert probes == acked
    assert Counter(mid for mid, _ in created if mid in acked) == Counter(dict.fromkeys(acked, 1))
    assert {r[0] for r in rows} >= set(acked)

    # one maintenance run at a time: audited runs never overlap, and the others were refused
    assert len(runs) == statuses[("maintain", 200)]
    for env in envs:
        spans = sorted(
            (datetime.fromisoformat(a), datetime.fromisoformat(b)) for e, a, b in runs if e == env
        )
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start >= end, f"two maintenance runs of {env} overlapped"
    assert statuses[("maintain", 409)] > 0
