"""Password sign-in and browser sessions, reusable by any page that signs a person in.

- :meth:`WebAuth.authenticate_password` checks a user name and password (Argon2id, in
  :class:`~engram.service.accounts.AccountService`), rate-limited
  in the store (:mod:`engram.service.sign_ins`).
- :meth:`WebAuth.start` opens a session (:mod:`engram.service.web_sessions`: in the store, only
  an HMAC digest of its token, with a CSRF token derived from it every form must echo);
  :func:`set_session_cookie` puts its token in an HttpOnly, SameSite=Strict cookie.
- :meth:`WebAuth.end_all` signs a user out everywhere.

Sessions live in the store: a restart signs no one out, and every server process on the store
knows them. An API key is never a session: only a token this module issued opens one.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from engram.accounts import ALL_SCOPES, Scope, User
from engram.actors import Actor
from engram.errors import NotFound
from engram.service.accounts import AccountService
from engram.service.sign_ins import SignInService
from engram.service.web_sessions import SESSION_TTL, WebSession, WebSessionService

COOKIE = "engram_session"
SESSION_SECONDS = int(SESSION_TTL.total_seconds())
INTERFACE = "web"
Session = WebSession


def actor_for(user: User) -> Actor:
    """The actor a signed-in user acts as: every scope for an administrator, read and write
    otherwise (roles in each environment still apply, as for an API key)."""
    scopes = ALL_SCOPES if user.is_admin else frozenset({Scope.READ, Scope.WRITE})
    return Actor(user.id, INTERFACE, None, scopes)


class WebAuth:
    """Sign-in (the store's failure counts) and the sessions of the store."""

    def __init__(
        self, accounts: AccountService, sessions: WebSessionService, sign_ins: SignInService
    ) -> None:
        self._accounts = accounts
        self._sessions = sessions
        self._sign_ins = sign_ins

    # -- sign-in -----------------------------------------------------------------------------
    def authenticate_password(self, name: str, password: str, client: str = "") -> User:
        """The user with this name and password. :class:`~engram.errors.Unauthenticated` for a
        wrong pair; :class:`~engram.errors.Saturated` (429) once a limit of
        :mod:`engram.service.sign_ins` is reached for the name from ``client``, right or
        wrong."""
        return self._sign_ins.verify(name, password, client)

    # -- sessions ----------------------------------------------------------------------------
    def start(self, user: User) -> tuple[str, Session]:
        """A new session for ``user``: its token (for the cookie) and the session."""
        return self._sessions.start(user)

    def get(self, token: str | None) -> Session | None:
        """The live session of a cookie's token, or None (unknown, expired, or ended)."""
        return self._sessions.get(token)

    def csrf_matches(self, session: Session, sent: object) -> bool:
        return self._sessions.csrf_matches(session, sent)

    def switch(self, token: str, environment: str | None) -> None:
        self._sessions.switch(token, environment)

    def end(self, token: str | None) -> None:
        self._sessions.end(token)

    def end_all(self, user_id: str) -> int:
        """Sign ``user_id`` out of every session; returns how many ended."""
        return self._sessions.end_all(user_id)

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
