"""POST /api/v1/capture/events is served ahead of FastAPI's routing (engram.api.capture_route):
it must answer exactly as the FastAPI route would — the same statuses and error bodies for
every kind of bad request, the same authentication and roles, the same result — and store each
event once. Two live servers over one store: the application as built, and the same without
the fast route (FastAPI's route then answers)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest

from engram import Engram
from engram.accounts import Role, Scope
from engram.actors import LOCAL
from engram.api import create_app
from engram.api.capture_route import CaptureEventsRoute, FastCapture
from engram.config import ServerSettings
from tests.live_server import running

PATH = "/api/v1/capture/events"


def _event(key: str, **over: Any) -> dict[str, Any]:
    base = {"agent": "claude", "kind": "prompt", "session_id": "s-1", "cwd": "/r/webapp"}
    return {
        **base,
        "project": "webapp",
        "at": "2026-12-01T10:00:00Z",
        "key": key,
        "text": "hi",
        **over,
    }


@pytest.fixture
def servers(engram: Engram) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(the app's URL, the same app without the fast route, tokens by name)."""
    engram.accounts.ensure_owner("owner")
    tokens = {
        "owner": engram.accounts.issue_key(LOCAL, "w", (Scope.READ, Scope.WRITE)).token,
        "reader": engram.accounts.issue_key(LOCAL, "r", (Scope.READ,)).token,
    }

    def without_fast_route(port: int) -> Any:
        app = create_app(engram, ServerSettings(port=port))
        assert isinstance(app.router.routes[0], CaptureEventsRoute)
        app.router.routes[:] = [
            r for r in app.router.routes if not isinstance(r, CaptureEventsRoute)
        ]
        app.user_middleware[:] = [
            m for m in app.user_middleware if cast(object, m.cls) is not FastCapture
        ]
        return app

    with (
        running(lambda port: create_app(engram, ServerSettings(port=port))) as fast,
        running(without_fast_route) as slow,
    ):
        yield fast, slow, tokens


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    r = httpx.post(url + PATH, content=body, headers=headers, timeout=60)
    return r.status_code, r.json()


def test_bad_requests_are_answered_as_the_fastapi_route_answers_them(
    servers: tuple[str, str, dict[str, str]],
) -> None:
    fast, slow, tokens = servers
    owner = {"Authorization": f"Bearer {tokens['owner']}", "Content-Type": "application/json"}
    good = json.dumps({"events": [_event("k-00000000")]}).encode()
    cases: list[tuple[str, bytes, dict[str, str]]] = [
        ("no key", good, {"Content-Type": "application/json"}),
        ("another scheme", good, {**owner, "Authorization": f"Basic {tokens['owner']}"}),
        ("a wrong key", good, {**owner, "Authorization": "Bearer egm_nope"}),
        ("a read-only key", good, {**owner, "Authorization": f"Bearer {tokens['reader']}"}),
        ("not JSON", b"{nope", owner),
        ("not UTF-8", b'{"events": ["\xff"]}', owner),
        ("too deep", b"[" * 5000 + b"]" * 5000, owner),
        ("no events", b"{}", owner),
        ("events not a list", b'{"events": 3}', owner),
        ("an empty list", b'{"events": []}', owner),
        (
            "too many",
            json.dumps({"events": [_event(f"k-{i:08}") for i in range(501)]}).encode(),
            owner,
        ),
        ("an unknown field", b'{"events": [{}], "x": 1}', owner),
        ("an invalid event", json.dumps({"events": [_event("bad key!")]}).encode(), owner),
        ("a bad project header", good, {**owner, "X-Engram-Project": "Not A Name"}),
        ("a lone surrogate", b'{"events": [{"text": "\\ud800"}]}', owner),
        ("no content type", good, {"Authorization": owner["Authorization"]}),
        ("another content type", good, {**owner, "Content-Type": "text/plain"}),
        ("an empty body", b"", owner),
        ("a bad header and body", b'{"events": 3}', {**owner, "X-Engram-Project": "-"}),
    ]
    for name, body, headers in cases:
        got, want = _post(fast, body, headers), _post(slow, body, headers)
        assert got == want, name
        assert got[0] in (401, 403, 404, 422), name


def test_events_are_stored_once_whichever_route_takes_them(
    servers: tuple[str, str, dict[str, str]], engram: Engram
) -> None:
    fast, slow, tokens = servers
    headers = {"Authorization": f"Bearer {tokens['owner']}", "X-Engram-Project": "webapp",
               "Content-Type": "application/json"}  # fmt: skip
    events = [_event(f"k-{i:08}", project=None) for i in range(3)]
    body = json.dumps({"events": events}).encode()
    assert _post(fast, body, headers) == (202, {"stored": 3, "duplicates": 0})
    assert _post(slow, body, headers) == (202, {"stored": 0, "duplicates": 3})
    assert _post(fast, body, headers) == (202, {"stored": 0, "duplicates": 3})
    actor = engram.accounts.authenticate(tokens["owner"])
    env = engram.environments.resolve("webapp", actor, Role.READER)  # the project header's
    sessions = engram.capture.list_sessions(actor, env.id)
    assert [s.events for s in sessions] == [3]
    # the route is counted under its own template, as every route is
    metrics = httpx.get(fast + "/metrics", timeout=60).text
    assert f'route="{PATH}",status="202"' in metrics


def test_a_revoked_key_is_refused_at_once_and_stores_nothing(
    servers: tuple[str, str, dict[str, str]], engram: Engram
) -> None:
    fast, _, _ = servers
    issued = engram.accounts.issue_key(LOCAL, "hook", (Scope.READ, Scope.WRITE))
    headers = {"Authorization": f"Bearer {issued.token}", "Content-Type": "application/json"}
    ok = json.dumps({"events": [_event("k-revoke-1")]}).encode()
    assert _post(fast, ok, headers) == (202, {"stored": 1, "duplicates": 0})
    engram.accounts.revoke_key(issued.key.id, LOCAL)
    late = json.dumps({"events": [_event("k-revoke-2")]}).encode()
    status, body = _post(fast, late, headers)
    assert status == 401, body
    owner = engram.accounts.authenticate(engram.accounts.issue_key(LOCAL, "x").token)
    env = engram.environments.resolve("webapp", owner, Role.READER)
    assert engram.store.capture.count_observations([env.id]) == 1


def test_an_idempotency_key_still_replays_the_first_answer(
    servers: tuple[str, str, dict[str, str]],
) -> None:
    fast, _, tokens = servers
    headers = {"Authorization": f"Bearer {tokens['owner']}", "Content-Type": "application/json",
               "Idempotency-Key": "hook-request-1"}  # fmt: skip
    body = json.dumps({"events": [_event("k-idem-001")]}).encode()
    first = httpx.post(fast + PATH, content=body, headers=headers, timeout=60)
    again = httpx.post(fast + PATH, content=body, headers=headers, timeout=60)
    assert (first.status_code, first.json()) == (202, {"stored": 1, "duplicates": 0})
    assert (again.status_code, again.json()) == (202, {"stored": 1, "duplicates": 0})
    assert again.headers.get("Idempotent-Replayed") == "true"


def test_accepted_events_log_at_debug_and_refusals_at_info(
    servers: tuple[str, str, dict[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    fast, _, tokens = servers
    headers = {"Authorization": f"Bearer {tokens['owner']}", "Content-Type": "application/json"}
    caplog.set_level(logging.DEBUG, logger="engram.api")
    assert _post(fast, json.dumps({"events": [_event("k-log-0001")]}).encode(), headers)[0] == 202
    assert _post(fast, b'{"events": 3}', headers)[0] == 422
    lines = [(r.levelno, getattr(r, "status", None)) for r in caplog.records if r.msg == "request"]
    assert (logging.DEBUG, 202) in lines and (logging.INFO, 422) in lines, lines
