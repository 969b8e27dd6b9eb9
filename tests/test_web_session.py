"""Password sign-in and sessions (engram.web.session) over the real account service on both
backends, and the dashboard's sign-in edge in process: the login form's CSRF token, no
redirect off the site, the rate limit as a page, sign-out, and ``engram users passwd``."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram import LOCAL, Engram
from engram.accounts import ALL_SCOPES, Scope
from engram.api import ServerSettings
from engram.cli import main
from engram.errors import Saturated, Unauthenticated
from engram.servers import http_app
from engram.web.session import FAILURE_WINDOW, MAX_FAILURES, SESSION_SECONDS, WebAuth, actor_for

pytestmark = pytest.mark.slow  # Argon2id hashes each sign-in (about 0.5 s apiece under load)
PASSWORD = "a long password"


class Ticks:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def people(engram: Engram) -> Engram:
    engram.accounts.create_user("ann", LOCAL, password=PASSWORD, is_admin=True)
    engram.accounts.create_user("bob", LOCAL, password=PASSWORD)
    return engram


def test_rate_limit_per_name_and_per_client(people: Engram) -> None:
    ticks = Ticks()
    auth = WebAuth(people.accounts, now=ticks)
    for _ in range(MAX_FAILURES):
        with pytest.raises(Unauthenticated):
            auth.authenticate_password("ann", "wrong guess", "10.0.0.1")
    with pytest.raises(Saturated, match="too many failed sign-ins"):
        auth.authenticate_password("ann", PASSWORD, "10.0.0.2")  # the name is locked
    with pytest.raises(Saturated):
        auth.authenticate_password("bob", PASSWORD, "10.0.0.1")  # so is the client
    assert auth.authenticate_password("bob", PASSWORD, "10.0.0.2").name == "bob"
    ticks.t += FAILURE_WINDOW + 1
    assert auth.authenticate_password(" ann ", PASSWORD, "10.0.0.1").name == "ann"


def test_sessions_end_expire_and_are_never_api_keys(people: Engram) -> None:
    ticks = Ticks()
    auth = WebAuth(people.accounts, now=ticks)
    ann = auth.authenticate_password("ann", PASSWORD)
    bob = auth.authenticate_password("bob", PASSWORD)
    a1, s1 = auth.start(ann)
    a2, _ = auth.start(ann)
    b1, _ = auth.start(bob)
    assert auth.get(a1) == s1 and s1.user_id == ann.id and len(s1.csrf) >= 32
    assert auth.end_all(ann.id) == 2
    assert auth.get(a1) is None and auth.get(a2) is None and auth.get(b1) is not None
    key = people.accounts.issue_key(LOCAL, "k", user_id=bob.id)
    assert auth.get(key.token) is None  # an API key opens no session
    ticks.t += SESSION_SECONDS
    assert auth.get(b1) is None
    assert actor_for(ann).scopes == ALL_SCOPES
    assert actor_for(bob).scopes == {Scope.READ, Scope.WRITE} and actor_for(bob).interface == "web"


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
