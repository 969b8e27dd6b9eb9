"""Password sign-in and browser sessions, reusable by any page that signs a person in (the
dashboard's login, an OAuth consent page).

- :meth:`WebAuth.authenticate_password` checks a user name and password (Argon2id, in
  :class:`~engram.service.accounts.AccountService`), rate-limited per name and per client.
- :meth:`WebAuth.start` opens a session; :func:`set_session_cookie` puts its token in an
  HttpOnly, SameSite=Strict cookie. The server keeps only an HMAC digest of the token, with a
  per-session CSRF token every form must echo.
- :meth:`WebAuth.end_all` signs a user out everywhere.

Sessions live in the server process: a restart signs everyone out. An API key is never a
session: only a token this module issued opens one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from starlette.requests import Request
from starlette.responses import Response

from engram.accounts import ALL_SCOPES, Scope, User
from engram.actors import Actor
from engram.errors import NotFound, Saturated, Unauthenticated
from engram.service.accounts import AccountService

COOKIE = "engram_session"
SESSION_SECONDS = 12 * 3600
"""A session lasts this long from sign-in, then the user signs in again."""
MAX_FAILURES = 5
"""Failed sign-ins allowed per user name, and per client address, in :data:`FAILURE_WINDOW`."""
FAILURE_WINDOW = 900.0
INTERFACE = "web"


@dataclass(frozen=True, slots=True)
class Session:
    user_id: str
    csrf: str
    expires_at: float
    environment: str | None = None
    """The environment the user switched to (None: their default)."""


@dataclass
class _Failures:
    """Recent failure times per key (a user name or a client address)."""

    times: dict[str, deque[float]] = field(default_factory=dict)

    def recent(self, key: str, now: float) -> deque[float]:
        found = self.times.setdefault(key, deque())
        while found and now - found[0] > FAILURE_WINDOW:
            found.popleft()
        return found


def actor_for(user: User) -> Actor:
    """The actor a signed-in user acts as: every scope for an administrator, read and write
    otherwise (roles in each environment still apply, as for an API key)."""
    scopes = ALL_SCOPES if user.is_admin else frozenset({Scope.READ, Scope.WRITE})
    return Actor(user.id, INTERFACE, None, scopes)


class WebAuth:
    """Sign-in and the sessions of one server."""

    def __init__(
        self,
        accounts: AccountService,
        secret: bytes | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._accounts = accounts
        self._now = now
        self._secret = secret or secrets.token_bytes(32)
        self._sessions: dict[str, Session] = {}
        self._failures = _Failures()
        self._lock = threading.Lock()

    def _digest(self, token: str) -> str:
        return hmac.new(self._secret, token.encode(), hashlib.sha256).hexdigest()

    # -- sign-in -----------------------------------------------------------------------------
    def authenticate_password(self, name: str, password: str, client: str = "") -> User:
        """The user with this name and password. :class:`~engram.errors.Unauthenticated` for a
        wrong pair; :class:`~engram.errors.Saturated` (429) after :data:`MAX_FAILURES` failures
        for the name or the client within :data:`FAILURE_WINDOW` seconds, right or wrong."""
        now = self._now()
        keys = [f"user:{name.strip().lower()}", f"client:{client}"]
        with self._lock:
            recent = [self._failures.recent(k, now) for k in keys]
            if any(len(r) >= MAX_FAILURES for r in recent):
                wait = max(FAILURE_WINDOW - (now - r[0]) for r in recent if r)
                raise Saturated(
                    f"too many failed sign-ins; try again in {int(wait) + 1} s",
                    retry_after=int(wait) + 1,
                )
        try:
            return self._accounts.verify_password(name.strip(), password)
        except Unauthenticated:
            with self._lock:
                for r in recent:
                    r.append(now)
            raise

    # -- sessions ----------------------------------------------------------------------------
    def start(self, user: User) -> tuple[str, Session]:
        """A new session for ``user``: its token (for the cookie) and the session."""
        token = secrets.token_urlsafe(32)
        session = Session(user.id, secrets.token_urlsafe(32), self._now() + SESSION_SECONDS)
        with self._lock:
            self._sessions[self._digest(token)] = session
        return token, session

    def get(self, token: str | None) -> Session | None:
        """The live session of a cookie's token, or None (unknown, expired, or ended)."""
        if not token or len(token) > 200:
            return None
        digest = self._digest(token)
        with self._lock:
            session = self._sessions.get(digest)
            if session is not None and session.expires_at <= self._now():
                del self._sessions[digest]
                return None
            return session

    def switch(self, token: str, environment: str | None) -> None:
        digest = self._digest(token)
        with self._lock:
            session = self._sessions.get(digest)
            if session is not None:
                self._sessions[digest] = replace(session, environment=environment)

    def end(self, token: str | None) -> None:
        if token:
            with self._lock:
                self._sessions.pop(self._digest(token), None)

    def end_all(self, user_id: str) -> int:
        """Sign ``user_id`` out of every session; returns how many ended."""
        with self._lock:
            ended = [d for d, s in self._sessions.items() if s.user_id == user_id]
            for digest in ended:
                del self._sessions[digest]
        return len(ended)

    def user(self, session: Session) -> User | None:
        """The session's user as stored now (None if the account is gone)."""
        try:
            return self._accounts.get_user(session.user_id, Actor(session.user_id, INTERFACE))
        except NotFound:
            return None


def session_token(request: Request) -> str | None:
    return request.cookies.get(COOKIE)


def set_session_cookie(response: Response, token: str, *, secure: bool) -> None:
    """The session cookie: HttpOnly (no script reads it), SameSite=Strict (no other site's
    page sends it), Secure over HTTPS, scoped to the whole origin."""
    response.set_cookie(
        COOKIE,
        token,
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
