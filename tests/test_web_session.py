"""Password sign-in and sessions (engram.web.session) over the real account service on both
backends, and the dashboard's sign-in edge in process: the login form's CSRF token, no
redirect off the site, the rate limit as a page, sign-out, and ``engram users passwd``."""

from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from engram import LOCAL, Engram
from engram.accounts import ALL_SCOPES, Scope
from engram.api import ServerSettings
from engram.cli import main
from engram.errors import Saturated, Unauthenticated
from engram.servers import http_app
from engram.service.sign_ins import ALL_FAILURES, FAILURE_WINDOW, MAX_FAILURES, NAME_FAILURES
from engram.store import Store
from engram.store.protocol import Erasure
from engram.store.sqlite import SQLiteStore
from engram.web.session import SESSION_SECONDS, WebAuth, actor_for
from tests.conftest import FakeClock
from tests.live_server import serve
from tests.sql import backend, query

pytestmark = pytest.mark.slow  # Argon2id hashes each sign-in (about 0.5 s apiece under load)
PASSWORD = "a long password"


@pytest.fixture
def people(engram: Engram) -> Engram:
    engram.accounts.create_user("ann", LOCAL, password=PASSWORD, is_admin=True)
    engram.accounts.create_user("bob", LOCAL, password=PASSWORD)
    return engram


def test_rate_limit_per_name_and_address(people: Engram, clock: FakeClock) -> None:
    auth = WebAuth(people.accounts, people.web_sessions, people.sign_ins)
    for _ in range(MAX_FAILURES):
        with pytest.raises(Unauthenticated):
            auth.authenticate_password("ann", "wrong guess", "10.0.0.1")
    with pytest.raises(Saturated, match="too many failed sign-ins; try again in 900 s"):
        auth.authenticate_password("Ann", PASSWORD, "10.0.0.1")  # this name from there: locked
    # everyone else behind that address, and ann from elsewhere, still sign in
    assert auth.authenticate_password("bob", PASSWORD, "10.0.0.1").name == "bob"
    assert auth.authenticate_password("ann", PASSWORD, "10.0.0.2").name == "ann"
    clock.advance(seconds=FAILURE_WINDOW + 1)
    assert auth.authenticate_password(" ann ", PASSWORD, "10.0.0.1").name == "ann"


def test_the_throttle_ceilings_per_name_and_for_the_server(
    people: Engram, clock: FakeClock
) -> None:
    throttle = people.sign_ins
    started = clock.now
    # one name guessed from many addresses: stopped everywhere at the name's ceiling
    for i in range(NAME_FAILURES):
        throttle.check("ann", f"10.1.0.{i}")
        throttle.failed("ann", f"10.1.0.{i}")
        clock.advance(seconds=1)
    with pytest.raises(Saturated):
        throttle.check("ann", "10.9.9.9")
    throttle.check("bob", "10.9.9.9")
    # many names from many addresses: the server's ceiling stops every sign-in
    for i in range(ALL_FAILURES - NAME_FAILURES):
        throttle.failed(f"user{i}", f"10.2.{i // 250}.{i % 250}")
    with pytest.raises(Saturated) as caught:
        throttle.check("bob", "10.9.9.9")
    # until the oldest failures leave the window (20 s and the test clock's few ms ago)
    assert caught.value.details["retry_after"] == int(FAILURE_WINDOW - NAME_FAILURES)
    clock.now = started + timedelta(seconds=FAILURE_WINDOW + 0.5)
    throttle.check("bob", "10.9.9.9")
    # the store keeps only the window's failures: no name as typed, no password
    rows = query(people.store, "SELECT name, address FROM sign_in_failures", ())
    assert 0 < len(rows) <= ALL_FAILURES
    assert not [r for r in rows if "ann" in r[0] or "user" in r[0]]


def test_every_process_on_the_store_counts_the_same_failures(
    store: Store, clock: FakeClock
) -> None:
    """Two servers over one database (``engram serve --workers 2``, or two hosts on one
    PostgreSQL): guesses spread over both are stopped as if they were one, and a restart
    does not forget them."""
    first = Engram(store, clock=clock, secret=SECRET)
    first.accounts.create_user("ann", LOCAL, password=PASSWORD)
    stores = [_reopened(store), _reopened(store)]
    try:
        one, two = (Engram(s, clock=clock, secret=SECRET) for s in stores)
        for i in range(MAX_FAILURES):
            with pytest.raises(Unauthenticated):
                (one, two)[i % 2].sign_ins.verify("ann", "wrong guess", "10.0.0.7")
        for engram in (one, two):
            with pytest.raises(Saturated, match="too many failed sign-ins"):
                engram.sign_ins.verify("ann", PASSWORD, "10.0.0.7")
    finally:
        for s in stores:
            s.close()
    with pytest.raises(Saturated):  # the first process, still open: the same counts
        first.sign_ins.verify("ann", PASSWORD, "10.0.0.7")


def test_sessions_end_expire_and_are_never_api_keys(people: Engram, clock: FakeClock) -> None:
    auth = WebAuth(people.accounts, people.web_sessions, people.sign_ins)
    ann = auth.authenticate_password("ann", PASSWORD)
    bob = auth.authenticate_password("bob", PASSWORD)
    a1, s1 = auth.start(ann)
    a2, _ = auth.start(ann)
    b1, _ = auth.start(bob)
    assert auth.get(a1) == s1 and s1.user_id == ann.id and len(s1.csrf) >= 32
    assert auth.csrf_matches(s1, s1.csrf) and not auth.csrf_matches(s1, "forged")
    assert auth.end_all(ann.id) == 2
    assert auth.get(a1) is None and auth.get(a2) is None and auth.get(b1) is not None
    key = people.accounts.issue_key(LOCAL, "k", user_id=bob.id)
    assert auth.get(key.token) is None  # an API key opens no session
    clock.advance(seconds=SESSION_SECONDS)
    assert auth.get(b1) is None
    assert actor_for(ann).scopes == ALL_SCOPES
    assert actor_for(bob).scopes == {Scope.READ, Scope.WRITE} and actor_for(bob).interface == "web"


def test_the_store_keeps_only_digests_and_expired_sessions_go(
    people: Engram, clock: FakeClock
) -> None:
    sessions = people.web_sessions
    ann = people.accounts.verify_password("ann", PASSWORD)
    token, session = sessions.start(ann)
    rows = query(people.store, "SELECT digest, user_id FROM web_sessions")
    assert [r[1] for r in rows] == [ann.id]
    assert token not in str(rows) and session.csrf not in str(rows)  # only a digest
    clock.advance(seconds=SESSION_SECONDS + 1)
    sessions.start(ann)  # a new session clears the expired ones
    assert len(query(people.store, "SELECT digest FROM web_sessions")) == 1
    assert sessions.get(token) is None
    # deleting the user deletes their sessions
    bob = people.accounts.verify_password("bob", PASSWORD)
    sessions.start(bob)
    people.store.erase(Erasure(user_id=bob.id))
    assert [r[0] for r in query(people.store, "SELECT user_id FROM web_sessions")] == [ann.id]


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def test_sign_in_edge(people: Engram) -> None:
    client = TestClient(http_app(people, ServerSettings()), base_url="http://127.0.0.1")
    page = client.get("/ui/login")
    form = {"name": "bob", "password": PASSWORD, "next": "//evil.example/x"}
    # without the form's token (or with another), no sign-in
    assert client.post("/ui/login", data=form).status_code == 403
    assert client.post("/ui/login", data={**form, "csrf": "forged"}).status_code == 403
    signed = client.post(
        "/ui/login", data={**form, "csrf": _csrf(page.text)}, follow_redirects=False
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/"  # not off-site
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    home = client.get("/ui/memories")
    assert home.status_code == 200 and "bob" in home.text
    out = client.post("/ui/logout", data={"csrf": _csrf(home.text)}, follow_redirects=False)
    assert out.status_code == 303
    assert client.get("/ui/memories", follow_redirects=False).status_code == 303
    # failures answer the form again, then 429 with the wait
    for _ in range(MAX_FAILURES):
        page = client.get("/ui/login")
        bad = client.post(
            "/ui/login", data={"name": "bob", "password": "nope nope", "csrf": _csrf(page.text)}
        )
        assert bad.status_code == 401 and "wrong user name or password" in bad.text
    page = client.get("/ui/login")
    locked = client.post(
        "/ui/login", data={"name": "bob", "password": PASSWORD, "csrf": _csrf(page.text)}
    )
    assert locked.status_code == 429 and "try again in" in locked.text
    assert int(locked.headers["retry-after"]) > 0
    # another user behind the same address (one proxy, one NAT) is not locked out
    page = client.get("/ui/login")
    other = client.post(
        "/ui/login",
        data={"name": "ann", "password": PASSWORD, "csrf": _csrf(page.text)},
        follow_redirects=False,
    )
    assert other.status_code == 303


def test_users_passwd(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = ["--home", str(tmp_path / "h")]
    assert main([*home, "init"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main([*home, "users", "passwd", "--stdin"]) != 0
    assert "8-1024 characters" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main([*home, "users", "passwd", "--stdin"]) == 0
    assert "password set for" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main([*home, "users", "passwd", "nobody", "--stdin"]) != 0
    assert "'nobody' does not exist" in capsys.readouterr().err
    from engram import Settings

    with Engram.open(Settings.load(tmp_path / "h")) as engram:
        [owner] = engram.accounts.list_users(LOCAL)
        assert engram.accounts.verify_password(owner.name, PASSWORD).id == owner.id
        token, _ = engram.web_sessions.start(owner)
    # a new password from the CLI signs the user out of the dashboard too
    monkeypatch.setattr("sys.stdin", io.StringIO("another long password\n"))
    assert main([*home, "users", "passwd", "--stdin"]) == 0
    assert "ended 1 dashboard session(s)" in capsys.readouterr().out
    with Engram.open(Settings.load(tmp_path / "h")) as engram:
        assert engram.web_sessions.get(token) is None


# -- sessions across restarts and server processes ----------------------------------------------
SECRET = b"the server secret of one home!!!"


def _reopened(store: Store) -> Store:
    """Another store object on the same database (what another server process opens)."""
    raw = backend(store)
    if isinstance(raw, SQLiteStore):
        return SQLiteStore(raw.path)
    from engram.store.postgres import PostgresStore

    assert isinstance(raw, PostgresStore)
    return PostgresStore(raw.url)


def _signed_in(url: str, name: str) -> tuple[str, str]:
    """Sign in through the login form; the session cookie's token and a page's CSRF token."""
    with httpx.Client(base_url=url, timeout=60) as client:
        page = client.get("/ui/login")
        form = {"name": name, "password": PASSWORD, "csrf": _csrf(page.text)}
        assert client.post("/ui/login", data=form).status_code == 303
        token = client.cookies["engram_session"]
        home = client.get("/ui/keys")
        assert home.status_code == 200, home.text
        return token, _csrf(home.text)


def test_a_session_survives_a_restart_and_every_process_shares_it(
    store: Store, clock: FakeClock
) -> None:
    """Sessions are in the store: a server started again over it (the same home's secret)
    still knows the session, two servers at once share it, a form's CSRF token from one is
    good on the other, and signing out everywhere on one ends it on both."""
    first = Engram(store, clock=clock, secret=SECRET)
    bob = first.accounts.create_user("bob", LOCAL, password=PASSWORD)
    with serve(first, build=http_app) as url:
        token, csrf = _signed_in(url, "bob")
    # the server is gone; two processes start over the same database
    stores = [_reopened(store), _reopened(store)]
    try:
        with (
            serve(Engram(stores[0], clock=clock, secret=SECRET), build=http_app) as one,
            serve(Engram(stores[1], clock=clock, secret=SECRET), build=http_app) as two,
        ):
            cookie = {"engram_session": token}
            for url in (one, two):
                with httpx.Client(base_url=url, cookies=cookie, timeout=60) as client:
                    page = client.get("/ui/keys")
                    assert page.status_code == 200 and "bob" in page.text
            with httpx.Client(base_url=two, cookies=cookie, timeout=60) as client:
                forged = client.post("/ui/logout-everywhere", data={"csrf": "forged"})
                assert forged.status_code == 403
                out = client.post("/ui/logout-everywhere", data={"csrf": csrf})
                assert out.status_code == 303 and out.headers["location"] == "/ui/login"
            with httpx.Client(base_url=one, cookies=cookie, timeout=60) as client:
                after = client.get("/ui/keys")
                assert after.status_code == 303 and after.headers["location"].startswith(
                    "/ui/login"
                )
    finally:
        for s in stores:
            s.close()
    rows = query(store, "SELECT user_id FROM web_sessions WHERE user_id = ?", (bob.id,))
    assert rows == []
