"""Bad input against a real uvicorn server: each answer is a 4xx the OpenAPI names, with the one
error body; nothing is stored; the keep-alive connection survives (issue 13, findings 6-11)."""

from __future__ import annotations

import http.client
import json
import socket
import sqlite3
import time
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from engram import LOCAL, NewMemory
from engram.api.errors import ErrorBody
from engram.api.server import KEEP_ALIVE_SECONDS
from engram.extraction import NewMessage
from engram.limits import (
    MAX_BODY_BYTES,
    MAX_CONTEXT_TOKENS,
    MAX_FILTER_VALUES,
    MAX_METADATA_BYTES,
    MAX_POSITION,
    MAX_QUERY_CHARS,
    MAX_REQUEST_HEAD_BYTES,
    MAX_SEARCH_RESULTS,
    MAX_URL_BYTES,
)
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

LONE = '"x \\ud800 y"'  # the JSON escape of a lone surrogate, as raw bytes on the wire
CONV = "/api/v1/conversations/c-probe"

# (method, path, body template with {s} where the bad string goes)
SURROGATE_WRITES = [
    ("POST", "/api/v1/facts", '{"content": {s}}'),
    ("POST", "/api/v1/facts", '{"content": "ok", "tags": [{s}]}'),
    ("POST", "/api/v1/facts", '{"content": "ok", "metadata": {"k": {s}}}'),
    ("POST", "/api/v1/facts", '{"content": "ok", "metadata": {{s}: 1}}'),
    ("POST", "/api/v1/facts", '{"content": "ok", "author": {s}}'),
    ("PATCH", "/api/v1/facts/{fact}", '{"content": {s}}'),
    ("POST", "/api/v1/facts/bulk", '[{"content": "ok"}, {"content": {s}}]'),
    ("POST", "/api/v1/episodes", '{"content": {s}}'),
    ("POST", "/api/v1/memories/remember", '{"content": {s}}'),
    ("POST", "/api/v1/extract", '{"messages": [{"role": "user", "content": {s}}]}'),
    (
        "POST",
        "/api/v1/extract",
        '{"conversation": {"id": "c-probe", "title": {s}}, '
        '"messages": [{"role": "user", "content": "ok"}]}',
    ),
    ("POST", CONV + "/messages", '{"messages": [{"role": "user", "content": {s}}]}'),
    ("POST", CONV + "/messages", '{"messages": [{"role": "user", "content": "ok"}], "title": {s}}'),
    ("POST", "/api/v1/search", '{"query": {s}}'),
    ("POST", "/api/v1/context/assemble", '{"query": {s}}'),
    ("PUT", "/api/v1/soul/blocks/current_focus", '{"text": {s}}'),
    ("POST", "/api/v1/environments", '{"name": "x", "description": {s}}'),
]


def fingerprint(live: Live) -> list[tuple[str, int]]:
    """Rows per table: what a refused request must leave as it was."""
    with sqlite3.connect(live.home / "engram.db") as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [(n, conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]) for n in names]


class Wire:
    """One HTTP/1.1 keep-alive connection; ``same_connection`` says whether it survived."""

    def __init__(self, live: Live) -> None:
        host, port = live.url.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=20)
        self.conn.connect()
        self.sock = self.conn.sock
        self.auth = {"Authorization": f"Bearer {live.owner_token}"}

    def send(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        headers = {**self.auth, "Content-Type": "application/json"}
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        assert response.getheader("connection") != "close", (response.status, data[:200])
        return response.status, json.loads(data)

    @property
    def same_connection(self) -> bool:
        return self.conn.sock is self.sock

    def close(self) -> None:
        self.conn.close()


def openapi(live: Live) -> Any:
    return httpx.get(live.url + "/openapi.json", timeout=60).json()  # built on first use


def refused(status: int, body: Any, expected: int = 422, names: str = "") -> None:
    assert status == expected, (status, body)
    error = ErrorBody.model_validate(body).error
    assert names in error.message, error.message


def test_lone_surrogates_are_422_store_nothing_and_keep_the_connection(live: Live) -> None:
    with live.client(live.owner_token) as c:
        fact = c.post("/api/v1/facts", json={"content": "a fact to patch"}).json()["id"]
    wire = Wire(live)
    before = fingerprint(live)
    for method, path, template in SURROGATE_WRITES:
        body = template.replace("{s}", LONE).encode()
        status, answer = wire.send(method, path.replace("{fact}", fact), body)
        refused(status, answer, names="lone surrogate")
        assert wire.same_connection, f"{method} {path} dropped the connection"
    assert fingerprint(live) == before
    status, answer = wire.send("GET", CONV)
    assert status == 404  # no conversation left behind with no messages
    wire.close()


def test_nul_is_refused_in_bodies_and_urls(live: Live) -> None:
    wire = Wire(live)
    before = fingerprint(live)
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": "a\\u0000b"}'), names="NUL")
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": "a", "tags": ["\\u0000"]}'))
    refused(*wire.send("GET", "/api/v1/facts?tag=a%00b"), names="NUL")
    refused(*wire.send("GET", "/api/v1/environments/x%00y"), names="NUL")
    assert fingerprint(live) == before and wire.same_connection


def test_the_service_layer_refuses_bad_text_for_every_edge() -> None:
    with pytest.raises(ValidationError, match="lone surrogate"):
        NewMemory(content="x \ud800 y")
    with pytest.raises(ValidationError, match="NUL"):
        NewMemory(content="ok", metadata={"a": ["\x00"]})
    with pytest.raises(ValidationError, match="lone surrogate"):
        NewMessage(role="user", content="\udfff")
    with pytest.raises(ValidationError, match="nested deeper"):
        NewMemory(content="ok", metadata={"a": _nested(40)})


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_list_and_integer_parameters_are_bounded(live: Live) -> None:
    wire = Wire(live)
    query = "&".join(f"tag=t{i}" for i in range(995))
    refused(*wire.send("GET", f"/api/v1/facts?{query}"), names="at most 50")
    refused(*wire.send("GET", f"{CONV}/messages?after=9223372036854775808"), names="after")
    assert wire.same_connection
    spec = openapi(live)
    listing = {p["name"]: p["schema"] for p in spec["paths"]["/api/v1/facts"]["get"]["parameters"]}
    assert listing["tag"]["maxItems"] == MAX_FILTER_VALUES
    messages = spec["paths"]["/api/v1/conversations/{conversation_id}/messages"]["get"]
    after = next(p for p in messages["parameters"] if p["name"] == "after")
    assert after["schema"]["maximum"] == MAX_POSITION


def test_date_filters_are_iso_timestamps_never_numbers(live: Live) -> None:
    """A schema fuzzer found ``GET /audit?until=0.0`` accepted (read as the Unix epoch)."""
    wire = Wire(live)
    for bound in ("until", "since"):
        refused(*wire.send("GET", f"/api/v1/audit?{bound}=0.0"), names="ISO 8601")
    for bound in ("created_after", "created_before", "updated_after", "updated_before"):
        refused(*wire.send("GET", f"/api/v1/facts?{bound}=1700000000"), names="ISO 8601")
    status, entries = wire.send("GET", "/api/v1/audit?until=2999-01-01T00:00:00Z&limit=1")
    assert status == 200 and len(entries) == 1
    status, entries = wire.send("GET", "/api/v1/audit?until=2999-01-01&limit=1")  # a date alone
    assert status == 200 and len(entries) == 1
    assert wire.same_connection


def test_undecodable_bodies_are_422(live: Live) -> None:
    wire = Wire(live)
    for body in (
        b'{"content": "\xff\xfe"}',  # not UTF-8
        b'{"content": "ok", "metadata": {"k": ' + b"[" * 1000 + b"]" * 1000 + b"}}",
        b'{"content": "ok", "metadata": {"k": ' + b"[" * 100 + b"]" * 100 + b"}}",
        b'{"content": ',  # not JSON
    ):
        refused(*wire.send("POST", "/api/v1/facts", body))
    # said as such, not as a field named after a character offset ('body.16: JSON decode error')
    refused(
        *wire.send("POST", "/api/v1/facts", b'{"content": "ok",, }'),
        names="the request body is not valid JSON (at character 17",
    )
    assert wire.same_connection
    spec = openapi(live)
    assert "400" not in spec["paths"]["/api/v1/facts"]["post"]["responses"]
    assert "422" in spec["paths"]["/api/v1/facts"]["post"]["responses"]


def _raw(live: Live, request: bytes) -> tuple[int, dict[str, Any]]:
    """Send bytes on a fresh socket and read the answer to the end."""
    host, port = live.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def test_long_urls_and_headers_get_a_status_not_a_reset(live: Live) -> None:
    wire = Wire(live)
    refused(*wire.send("GET", "/api/v1/facts?tag=" + "x" * 70_000), expected=414)
    assert wire.same_connection
    wire.conn.putrequest("GET", "/api/v1/users/me")
    wire.conn.putheader("Authorization", wire.auth["Authorization"])
    wire.conn.putheader("X-Filler", "y" * 40_000)
    wire.conn.endheaders()
    response = wire.conn.getresponse()
    refused(response.status, json.loads(response.read()), expected=431)
    assert wire.same_connection
    assert MAX_URL_BYTES < 70_000
    # a head beyond even what the parser buffers: 431 and the error body, then a close
    status, body = _raw(live, b"GET /api/v1/facts?tag=" + b"x" * 2 * MAX_REQUEST_HEAD_BYTES)
    refused(status, body, expected=431)


def test_an_idle_connection_outlives_the_clients_keep_alive(live: Live) -> None:
    """httpx drops an idle pooled connection after 5 s; had the server closed it first (its
    default is also 5 s), a request sent on it as it closed would fail with a reset, as one
    did in the four-server load test."""
    wire = Wire(live)
    assert wire.send("GET", "/api/v1/users/me")[0] == 200
    expiry = httpx.Limits().keepalive_expiry or 0.0
    assert expiry * 5 < KEEP_ALIVE_SECONDS
    time.sleep(expiry + 1.5)
    assert wire.send("GET", "/api/v1/users/me")[0] == 200
    assert wire.same_connection
    wire.close()


def test_metadata_and_body_sizes_are_bounded(live: Live) -> None:
    wire = Wire(live)
    before = fingerprint(live)
    big = json.dumps({"content": "ok", "metadata": {"k": "x" * MAX_METADATA_BYTES}}).encode()
    refused(*wire.send("POST", "/api/v1/facts", big), names="metadata")
    many = json.dumps({"content": "ok", "metadata": {f"k{i}": i for i in range(65)}}).encode()
    refused(*wire.send("POST", "/api/v1/facts", many), names="metadata")
    huge = json.dumps({"content": "ok", "metadata": {"k": "x" * 10_000_000}}).encode()
    refused(*wire.send("POST", "/api/v1/facts", huge), expected=413)
    assert wire.same_connection
    assert fingerprint(live) == before
    auth = {"Authorization": f"Bearer {live.owner_token}"}
    with httpx.Client(base_url=live.url, headers=auth, timeout=60) as c:  # streamed, no length
        chunks = (b"x" * 65536 for _ in range(MAX_BODY_BYTES // 65536 + 2))
        response = c.post("/api/v1/facts", content=chunks)
        refused(response.status_code, response.json(), expected=413)


def test_the_schema_states_what_the_server_enforces(live: Live) -> None:
    spec = openapi(live)
    schemas = spec["components"]["schemas"]
    fact = schemas["NewFact"]["properties"]
    assert fact["content"]["maxLength"] == 20_000 and fact["content"]["pattern"].startswith("[^")
    assert fact["tags"]["maxItems"] == 32 and fact["tags"]["items"]["maxLength"] == 64
    assert fact["metadata"]["maxProperties"] == 64
    assert fact["author"]["anyOf"][0]["maxLength"] == 200
    context = schemas["ContextRequest"]["properties"]["max_tokens"]
    assert (context["minimum"], context["maximum"]) == (64, MAX_CONTEXT_TOKENS)
    wire = Wire(live)
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": " \\n "}'), names="empty")
    refused(*wire.send("POST", "/api/v1/maintenance", b'{"dry_run": 0}'), names="dry_run")
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": "a", "pinned": "yes"}'))
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": "a", "importance": "0.5"}'))
    refused(*wire.send("POST", "/api/v1/facts", b'{"content": "a", "created_at": 0}'))
    refused(*wire.send("POST", "/api/v1/context/assemble", b'{"max_tokens": 63}'))
    # a range whose start is past its end is no error: it matches nothing
    reversed_range = "created_after=2026-02-01T00:00:00Z&created_before=2026-01-01T00:00:00Z"
    status, page = wire.send("GET", f"/api/v1/facts?{reversed_range}")
    assert status == 200 and page["items"] == []


def test_rest_search_takes_the_services_limits_and_its_empty_query_brief(live: Live) -> None:
    """One set of search limits (engram.limits) for the service, REST and MCP: REST used to
    refuse the empty-query brief, 101-200 results and 2,001-4,000 characters."""
    live.engram.memories.add(NewMemory(content="The deploy runs nightly", importance=0.9), LOCAL)
    with live.client(live.owner_token) as c:
        brief = c.post("/api/v1/search", json={"query": "", "limit": MAX_SEARCH_RESULTS})
        assert brief.status_code == 200, brief.text
        found = [i["memory"]["content"] for i in brief.json()["items"]]
        assert found == ["The deploy runs nightly"]
        long = c.post("/api/v1/search", json={"query": "deploy " * (MAX_QUERY_CHARS // 7)})
        assert long.status_code == 200, long.text
        too_long = c.post("/api/v1/search", json={"query": "x" * (MAX_QUERY_CHARS + 1)})
        assert too_long.status_code == 422 and "query" in too_long.text
        too_many = c.post("/api/v1/search", json={"query": "x", "limit": MAX_SEARCH_RESULTS + 1})
        assert too_many.status_code == 422 and "limit" in too_many.text
    body = openapi(live)["components"]["schemas"]["SearchRequest"]["properties"]
    assert body["query"]["maxLength"] == MAX_QUERY_CHARS and "minLength" not in body["query"]
    assert body["limit"]["maximum"] == MAX_SEARCH_RESULTS
