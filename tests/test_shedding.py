"""Load shedding on a real server: past ``max_in_flight`` requests in flight, one more is
answered 429 at once with ``Retry-After`` and the one error body (never queued); health probes
are never shed; a slot frees as soon as its request has answered; the capture route's own
saturation carries ``Retry-After`` too."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from engram import LOCAL, Engram
from engram.api import ServerSettings, create_app
from engram.config import DEFAULT_MAX_IN_FLIGHT
from engram.errors import InvalidInput
from engram.service.accounts import AccountService
from tests.live_server import running


@pytest.fixture
def token(engram: Engram, tmp_path: Path) -> str:
    accounts: AccountService = engram.accounts
    issued = accounts.bootstrap_owner("owner", tmp_path / "token")
    assert issued is not None
    engram.environments.ensure_default(LOCAL)
    return issued.token


@contextmanager
def held(url: str, token: str, body: bytes) -> Iterator[socket.socket]:
    """A POST /api/v1/facts whose head is sent and whose body is not (yet): the request is in
    flight until the block sends the rest."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    head = (
        f"POST /api/v1/facts HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body[:5])
    try:
        yield sock
    finally:
        sock.close()


def _status(sock: socket.socket, rest: bytes) -> int:
    sock.sendall(rest)
    answer = b""
    while b"\r\n" not in answer:
        answer += sock.recv(4096)
    return int(answer.split(b" ", 2)[1])


def _in_flight(c: httpx.Client) -> float:
    for line in c.get("/metrics").text.splitlines():
        if line.startswith("engram_http_requests_in_flight "):
            return float(line.split()[1])
    return 0.0


def _until(c: httpx.Client, n: int) -> None:
    """Wait until the server counts ``n`` requests in flight (the metrics are never shed)."""
    deadline = time.monotonic() + 20
    while _in_flight(c) != n:
        assert time.monotonic() < deadline, f"never {n} in flight"
        time.sleep(0.01)


def test_past_the_bound_a_request_is_shed_with_retry_after(engram: Engram, token: str) -> None:
    body = json.dumps({"content": "The shed test holds this request open"}).encode()
    app = lambda port: create_app(engram, ServerSettings(port=port, max_in_flight=2))  # noqa: E731
    auth = {"Authorization": f"Bearer {token}"}
    with running(app) as url, httpx.Client(base_url=url, headers=auth, timeout=30) as c:
        assert c.get("/api/v1/facts").status_code == 200
        with held(url, token, body) as first:
            _until(c, 1)
            with held(url, token, body) as second:
                _until(c, 2)  # both slots are taken
                shed = c.post("/api/v1/facts", json={"content": "one too many"})
                assert shed.status_code == 429, shed.text
                assert shed.headers["Retry-After"] == "1"
                error = shed.json()["error"]
                assert error["code"] == "saturated" and error["details"]["in_flight"] == 2
                assert c.get("/healthz").status_code == 200  # probes are never shed
                assert c.get("/readyz").status_code == 200
                assert "engram_http_requests_shed_total 1.0" in c.get("/metrics").text
                assert _status(first, body[5:]) == 201  # the held request completes
                _until(c, 1)  # its slot is free again
                assert c.post("/api/v1/facts", json={"content": "a freed slot"}).status_code == 201
                assert _status(second, body[5:]) == 201
        assert c.post("/api/v1/facts", json={"content": "after"}).status_code == 201
    contents = {m.content for m in engram.memories.list_memories(LOCAL).items}
    assert "one too many" not in contents  # a shed request stores nothing
    assert {"a freed slot", "after", "The shed test holds this request open"} <= contents


def test_unbounded_with_zero(engram: Engram, token: str) -> None:
    body = json.dumps({"content": "held open"}).encode()
    app = lambda port: create_app(engram, ServerSettings(port=port, max_in_flight=0))  # noqa: E731
    auth = {"Authorization": f"Bearer {token}"}
    with (
        running(app) as url,
        httpx.Client(base_url=url, headers=auth, timeout=30) as c,
        held(url, token, body) as first,
    ):
        assert c.post("/api/v1/facts", json={"content": "not shed"}).status_code == 201
        assert _status(first, body[5:]) == 201


def test_the_capture_routes_saturation_says_when_to_retry(engram: Engram, token: str) -> None:
    engram.capture.max_pending = 0  # every request finds the queue full
    app = lambda port: create_app(engram, ServerSettings(port=port))  # noqa: E731
    auth = {"Authorization": f"Bearer {token}"}
    event = {"agent": "claude", "kind": "prompt", "session_id": "s-1", "cwd": "/tmp",
             "key": "claude-0123456789abcdef", "project": "webapp", "text": "hello",
             "at": "2026-01-01T12:00:00Z"}  # fmt: skip
    with running(app) as url, httpx.Client(base_url=url, headers=auth, timeout=30) as c:
        answer = c.post("/api/v1/capture/events", json={"events": [event]})
        assert answer.status_code == 429, answer.text
        assert answer.headers["Retry-After"] == "1"


def test_the_bound_is_checked() -> None:
    assert ServerSettings().max_in_flight == DEFAULT_MAX_IN_FLIGHT
    with pytest.raises(InvalidInput, match="max in flight"):
        ServerSettings(max_in_flight=-1)
    with pytest.raises(InvalidInput, match="workers"):
        ServerSettings(workers=0)
