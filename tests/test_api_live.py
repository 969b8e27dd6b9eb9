"""A real uvicorn server on 127.0.0.1 (a free port, a temporary ENGRAM_HOME), stopped by its
fixture; shared by the API and SDK tests. The tests here check the server itself."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from engram import LOCAL, Engram, Settings
from engram.accounts import Scope
from engram.api import ServerSettings
from engram.cli.keys import bootstrap
from tests.live_server import serve


@dataclass
class Live:
    url: str
    engram: Engram
    owner_token: str
    home: Path

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10)

    def new_user(self, name: str, *scopes: Scope) -> tuple[str, str]:
        """A user and a token of theirs: (user id, token)."""
        user = self.engram.accounts.create_user(name, LOCAL)
        key = self.engram.accounts.issue_key(
            LOCAL, "test", scopes or (Scope.READ, Scope.WRITE), user_id=user.id
        )
        return user.id, key.token


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    home = tmp_path / "server-home"
    engram = Engram.open(Settings.load(home))
    issued = bootstrap(engram, home)
    assert issued is not None
    try:
        with serve(engram) as url:
            yield Live(url, engram, issued.token, home)
    finally:
        engram.close()


def test_health_ready_metrics_docs(live: Live) -> None:
    with live.client() as c:
        assert c.get("/healthz").json() == {"status": "ok", "pid": os.getpid()}  # in-thread
        assert c.get("/readyz").json() == {"status": "ready", "pid": os.getpid()}
        assert c.get("/docs").status_code == 200
        spec = c.get("/openapi.json").json()
        assert "/api/v1/facts" in spec["paths"] and "/api/v1/audit" in spec["paths"]
        c.get("/api/v1/facts")  # a 401, counted
        text = c.get("/metrics").text
    assert 'engram_http_requests_total{method="GET",route="/healthz",status="200"}' in text
    assert 'route="/api/v1/facts",status="401"' in text
    assert "engram_http_request_duration_seconds_bucket" in text


def test_canonical_error_body(live: Live) -> None:
    """Every error, whatever raised it, has the same shape."""
    with live.client(live.owner_token) as c:
        missing = c.get("/api/v1/facts/mem_nope")
        invalid = c.post("/api/v1/facts", json={"content": "", "importance": 7})
        malformed = c.post(
            "/api/v1/facts", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        c.post("/api/v1/environments", json={"name": "dup"})
        conflict = c.post("/api/v1/environments", json={"name": "dup"})
        no_route = c.get("/api/v1/nothing-here")
        wrong_method = c.put("/api/v1/facts")
    with live.client() as anon:
        unauth = anon.get("/api/v1/facts")
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "code": "not_found",
            "message": "memory 'mem_nope' does not exist",
            "details": {"memory_id": "mem_nope"},
        }
    }
    assert invalid.status_code == 422
    body = invalid.json()["error"]
    assert body["code"] == "invalid_input"
    assert {tuple(e["loc"]) for e in body["details"]["errors"]} == {
        ("body", "content"),
        ("body", "importance"),
    }
    assert "content must not be empty" in body["message"]
    for response, status, code in (
        (malformed, 422, "invalid_input"),
        (conflict, 409, "conflict"),
        (no_route, 404, "not_found"),
        (wrong_method, 405, "method_not_allowed"),
        (unauth, 401, "unauthenticated"),
    ):
        assert response.status_code == status
        assert set(response.json()) == {"error"}
        assert set(response.json()["error"]) == {"code", "message", "details"}
        assert response.json()["error"]["code"] == code
    assert unauth.headers["www-authenticate"] == "Bearer"


def test_refuses_non_loopback_without_auth() -> None:
    from engram.errors import InvalidInput

    ServerSettings(host="127.0.0.1", auth=False)
    ServerSettings(host="0.0.0.0", auth=True)
    with pytest.raises(InvalidInput, match="without authentication"):
        ServerSettings(host="0.0.0.0", auth=False)
    with pytest.raises(InvalidInput, match="without authentication"):
        ServerSettings(host="192.168.1.5", auth=False)
