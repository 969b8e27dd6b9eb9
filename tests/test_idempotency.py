"""``Idempotency-Key`` on the REST API, against a live uvicorn server on both backends: a
repeat returns the first answer and stores nothing, another request with the same key is
refused, concurrent duplicates run once, and a reservation left by a killed server is taken
over or refused depending on whether the first attempt wrote."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Message

from engram import Engram
from engram.api import ServerSettings, create_app
from engram.api import idempotency as idem
from engram.cli.keys import bootstrap
from engram.store.idempotency import InFlight, Reservation
from engram.store.postgres import PostgresStore
from engram.store.protocol import Store
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock
from tests.live_server import running
from tests.sql import backend


@dataclass
class Served:
    url: str
    engram: Engram
    token: str

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture
def served(engram: Engram, tmp_path: Path) -> Iterator[Served]:
    issued = bootstrap(engram, tmp_path / "home")
    assert issued is not None
    with running(lambda port: create_app(engram, ServerSettings(port=port))) as url:
        yield Served(url, engram, issued.token)


def row_counts(store: Store) -> dict[str, int]:
    """Rows in every table of the database but the idempotency keys themselves."""
    store = backend(store)
    if isinstance(store, SQLiteStore):
        conn = store.db.reader()
        names = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_")
        ]
        counts = {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    else:
        assert isinstance(store, PostgresStore)
        with store.db.reader() as pg:
            names = [
                r[0]
                for r in pg.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                )
            ]
            counts = {}
            for n in names:
                row = pg.execute(f'SELECT count(*) FROM "{n}"').fetchone()
                counts[n] = row[0] if row else 0
    counts.pop("idempotency_keys")
    return counts


def _creates(c: httpx.Client) -> list[tuple[str, dict[str, Any]]]:
    """One request for each kind of create."""
    conversation = f"conv-{uuid.uuid4().hex[:8]}"
    messages = [
        {"role": "user", "content": "I prefer tea over coffee in the morning."},
        {"role": "assistant", "content": "Noted: tea in the morning."},
    ]
    return [
        ("/api/v1/facts", {"json": {"content": "the build uses make"}}),
        ("/api/v1/facts/bulk", {"json": [{"content": "one"}, {"content": "two"}]}),
        ("/api/v1/episodes", {"json": {"layer": "episode", "content": "we shipped 1.0"}}),
        (
            "/api/v1/procedures",
            {"json": {"content": "run the tests", "procedure": {"name": "test"}}},
        ),
        ("/api/v1/memories/remember", {"json": {"content": "the office is in Lyon"}}),
        ("/api/v1/extract", {"json": {"messages": messages}}),
        (f"/api/v1/conversations/{conversation}/messages", {"json": {"messages": messages}}),
        ("/api/v1/environments", {"json": {"name": "side-project"}}),
        ("/api/v1/users", {"json": {"name": "carol"}}),
        ("/api/v1/soul/snapshots", {"json": {"label": "before"}}),
    ]


def test_a_repeat_returns_the_first_answer_and_stores_nothing(served: Served) -> None:
    store = served.engram.store
    with served.client() as c:
        for path, kw in _creates(c):
            key = str(uuid.uuid4())
            first = c.post(path, headers={idem.HEADER: key}, **kw)
            assert first.status_code < 300, (path, first.text)
            after_first = row_counts(store)
            again = c.post(path, headers={idem.HEADER: key}, **kw)
            assert (again.status_code, again.content) == (first.status_code, first.content), path
            assert again.headers[idem.REPLAYED] == "true"
            assert idem.REPLAYED.lower() not in first.headers
            assert row_counts(store) == after_first, path


def test_the_same_key_for_another_request_is_refused(served: Served) -> None:
    with served.client() as c:
        key = {idem.HEADER: "order-17"}
        first = c.post("/api/v1/facts", headers=key, json={"content": "first"})
        before = row_counts(served.engram.store)
        other_body = c.post("/api/v1/facts", headers=key, json={"content": "second"})
        other_path = c.post("/api/v1/episodes", headers=key, json={"content": "first"})
        other_query = c.post(
            "/api/v1/facts", headers=key, params={"environment": "x"}, json={"content": "first"}
        )
        bad_key = c.post("/api/v1/facts", headers={idem.HEADER: "a b"}, json={"content": "x"})
    assert first.status_code == 201
    for response in (other_body, other_path, other_query):
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_input"
        assert "'order-17' was already used" in error["message"]
    assert bad_key.status_code == 422
    assert "Idempotency-Key must be 1 to 255 visible ASCII" in bad_key.json()["error"]["message"]
    assert row_counts(served.engram.store) == before


def test_keys_are_per_user(served: Served) -> None:
    other = served.engram.accounts.create_user("dave", _local())
    token = served.engram.accounts.issue_key(_local(), "t", user_id=other.id).token
    key = {idem.HEADER: "same-key"}
    with served.client() as mine:
        a = mine.post("/api/v1/facts", headers=key, json={"content": "mine"})
    theirs = Served(served.url, served.engram, token)
    with theirs.client() as c:
        b = c.post("/api/v1/facts", headers=key, json={"content": "theirs"})
    assert a.status_code == b.status_code == 201
    assert a.json()["id"] != b.json()["id"]
    assert idem.REPLAYED.lower() not in b.headers


def _local() -> Any:
    from engram import LOCAL

    return LOCAL


def test_a_failure_that_changed_nothing_keeps_no_answer(served: Served) -> None:
    with served.client() as c:
        request: dict[str, Any] = {
            "headers": {idem.HEADER: "retry-me"},
            "params": {"environment": "later"},
            "json": {"content": "x"},
        }
        missing = c.post("/api/v1/facts", **request)
        c.post("/api/v1/environments", json={"name": "later"})
        created = c.post("/api/v1/facts", **request)
    assert missing.status_code == 404
    assert created.status_code == 201  # not a replay of the 404: it ran again
    assert idem.REPLAYED.lower() not in created.headers


def test_issued_tokens_are_not_kept(served: Served) -> None:
    with served.client() as c:
        key = {idem.HEADER: "new-key-1"}
        first = c.post("/api/v1/keys", headers=key, json={"name": "ci"})
        again = c.post("/api/v1/keys", headers=key, json={"name": "ci"})
    assert first.status_code == 201
    token = first.json()["token"]
    assert again.status_code == 409 and again.headers[idem.REPLAYED] == "true"
    assert first.json()["key"]["id"] in again.json()["error"]["message"]
    assert token not in again.text
    store = served.engram.store.idempotency
    now = served.engram.clock()
    kept = store.reserve(_owner_id(served), "new-key-1", "", "x", now, now - timedelta(days=1))
    assert kept is not None and kept.body is not None and token.encode() not in kept.body


def _owner_id(served: Served) -> str:
    return served.engram.accounts.authenticate(served.token).user_id


def test_concurrent_duplicates_run_once(served: Served) -> None:
    store = served.engram.store
    before = row_counts(store)
    answers: list[httpx.Response] = []
    start = threading.Barrier(8, timeout=30)

    def post() -> None:
        with served.client() as c:
            start.wait()
            answers.append(
                c.post("/api/v1/facts", headers={idem.HEADER: "race"}, json={"content": "once"})
            )

    threads = [threading.Thread(target=post) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    statuses = sorted(r.status_code for r in answers)
    assert len(answers) == 8 and set(statuses) <= {201, 409}
    ids = {r.json()["id"] for r in answers if r.status_code == 201}
    assert len(ids) == 1  # every 201 is the same memory: the one stored
    for r in answers:
        if r.status_code == 409:
            assert r.json()["error"]["details"]["state"] == "in_progress"
            assert r.headers["retry-after"] == "1"
    counts = row_counts(store)
    assert counts["memories"] == before["memories"] + 1


def test_a_duplicate_that_read_before_the_answer_was_kept_replays_it(served: Served) -> None:
    """The interleaving the concurrent test met now and then: a duplicate read the reservation
    while the first request ran (executed, not yet answered); by the time it asked whether the
    owner still held it, the owner had kept its answer and let go. It replays that answer
    instead of a 409 "carried out, answer lost" (what it answered before the fix)."""
    engram = served.engram
    user, now = _owner_id(served), engram.clock()
    store = engram.store.idempotency
    assert store.reserve(user, "late", "fp", idem.OWNER, now, now - timedelta(days=1)) is None
    stale = Reservation("fp", idem.OWNER, now, executed=True)  # what the duplicate read
    store.answer(user, "late", idem.OWNER, 201, "application/json", b'{"id": "mem_x"}')
    middleware = idem.IdempotencyMiddleware(create_app(engram), engram, ServerSettings())
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    inflight = InFlight(user, "late", idem.OWNER)
    anyio.run(middleware._repeat, send, inflight, stale, "fp")  # the owner no longer holds it
    assert sent[0]["status"] == 201
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b'{"id": "mem_x"}'


def test_a_duplicate_between_the_reservation_and_its_registration_waits(served: Served) -> None:
    """The race the concurrent test met under load (4 memories for one key): the first request's
    reservation was committed but not yet registered as running in this process when a
    duplicate read it, took this process for an owner that no longer runs it, took the
    reservation over and ran too. The duplicate now finds it held and answers 409."""
    engram = served.engram
    user = _owner_id(served)
    middleware = idem.IdempotencyMiddleware(create_app(engram), engram, ServerSettings())
    real = engram.store.idempotency
    committed, duplicate_done = threading.Event(), threading.Event()

    class Slow:
        """The store, with the first caller paused after its reservation is committed."""

        def __init__(self) -> None:
            self.paused = False

        def reserve(self, *args: Any) -> Reservation | None:
            found = real.reserve(*args)
            if not self.paused:
                self.paused = True
                committed.set()
                duplicate_done.wait(2)  # before the fix the duplicate ran meanwhile
            return found

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    middleware._store = Slow()  # type: ignore[assignment]
    results: dict[str, Reservation | None] = {}

    def first() -> None:
        results["first"] = middleware._reserve(InFlight(user, "gap", idem.OWNER), "fp")

    def duplicate() -> None:
        committed.wait(10)
        results["duplicate"] = middleware._reserve(InFlight(user, "gap", idem.OWNER), "fp")
        duplicate_done.set()

    threads = [threading.Thread(target=first), threading.Thread(target=duplicate)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results["first"] is None  # reserved: it runs
    found = results["duplicate"]
    assert found is not None and not found.answered  # held by the first: a 409, not a 2nd run


def test_a_dead_servers_reservation(served: Served, clock: FakeClock) -> None:
    """A reservation whose owner process is gone: taken over if nothing was written, else
    never run again."""
    store = served.engram.store.idempotency
    user = _owner_id(served)
    now = served.engram.clock()
    dead = f"{idem.HOST}:999999999:0000"  # no such process
    body = b'{"content":"after a crash"}'
    fp = idem.fingerprint("POST", "/api/v1/facts", b"", body)
    stale = now - idem.RETENTION
    assert store.reserve(user, "crashed-before", fp, dead, now, stale) is None
    assert store.reserve(user, "crashed-after", fp, dead, now, stale) is None
    _mark_executed(served.engram.store, "crashed-after")  # as the write's transaction does

    def post(key: str) -> httpx.Response:
        headers = {"Content-Type": "application/json", idem.HEADER: key}
        return c.post("/api/v1/facts", headers=headers, content=body)

    with served.client() as c:
        rerun, refused, replay = (
            post("crashed-before"),
            post("crashed-after"),
            post("crashed-before"),
        )
    assert rerun.status_code == 201
    assert replay.content == rerun.content and replay.headers[idem.REPLAYED] == "true"
    assert refused.status_code == 409
    assert refused.json()["error"]["details"]["state"] == "carried_out"


def _mark_executed(store: Store, key: str) -> None:
    sql = "UPDATE idempotency_keys SET executed = 1 WHERE key = '" + key + "'"
    store = backend(store)
    if isinstance(store, SQLiteStore):
        with store.db.tx() as conn:
            conn.execute(sql)
    else:
        assert isinstance(store, PostgresStore)
        with store.db.tx() as pg:
            pg.execute(sql)  # type: ignore[arg-type]


def test_keys_expire_after_a_day(served: Served, clock: FakeClock) -> None:
    with served.client() as c:
        key = {idem.HEADER: "daily"}
        first = c.post("/api/v1/facts", headers=key, json={"content": "monday"})
        clock.advance(hours=25)
        later = c.post("/api/v1/facts", headers=key, json={"content": "tuesday"})
    assert first.status_code == later.status_code == 201
    assert first.json()["id"] != later.json()["id"]
    store = served.engram.store.idempotency
    assert store.prune(clock() + timedelta(seconds=1)) == 1  # only the newest row was left


def test_openapi_documents_the_header(served: Served) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as c:  # the spec is built on first use
        spec = c.get("/openapi.json").json()

    def names(path: str, method: str) -> list[str]:
        return [p["name"] for p in spec["paths"][path][method].get("parameters", [])]

    assert idem.HEADER in names("/api/v1/facts", "post")
    assert idem.HEADER in names("/api/v1/facts/{memory_id}", "patch")
    assert idem.HEADER in names("/api/v1/keys", "post")
    assert idem.HEADER not in names("/api/v1/facts", "get")
    assert idem.HEADER not in names("/api/v1/search", "post")
