"""The dashboard's browser sessions, kept in the store: a restart signs no one out, and every
server process on the store (``engram serve --workers N``) knows every session.

A session is opened after a password sign-in; its token goes to the browser (an HttpOnly
cookie, set by the web edge) and the store keeps only an HMAC digest of it, under the server
secret. Its CSRF token is derived from the session token with that secret, so any process can
check a form without storing it. A session lasts :data:`SESSION_TTL` from sign-in; sessions
past that are deleted when the next one opens. An API key never opens a session.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.accounts import User
from engram.clock import Clock
from engram.service.accounts import AccountService
from engram.store import Store
from engram.store.web_sessions import WebSessionRecord

SESSION_TTL = timedelta(hours=12)
"""A session lasts this long from sign-in, then the user signs in again."""
MAX_TOKEN_CHARS = 200


@dataclass(frozen=True, slots=True)
class WebSession:
    user_id: str
    csrf: str
    """What every form of this session must echo."""
    expires_at: datetime
    environment: str | None = None
    """The environment the user switched to (None: their default)."""


class WebSessionService:
    def __init__(self, store: Store, clock: Clock, accounts: AccountService) -> None:
        self._store = store.web_sessions
        self._clock = clock
        self._accounts = accounts

    def _digest(self, token: str) -> str:
        return self._accounts.digest("web-session:" + token)

    def _csrf(self, token: str) -> str:
        return self._accounts.digest("web-csrf:" + token)

    def start(self, user: User) -> tuple[str, WebSession]:
        """A new session for ``user`` (who signed in): its token, for the cookie, and the
        session."""
        token = secrets.token_urlsafe(32)
        now = self._clock()
        record = WebSessionRecord(self._digest(token), user.id, now, now + SESSION_TTL)
        self._store.put(record, expired_before=now)
        return token, WebSession(user.id, self._csrf(token), record.expires_at)

    def get(self, token: str | None) -> WebSession | None:
        """The live session of a cookie's token, or None (unknown, expired or ended)."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        digest = self._digest(token)
        record = self._store.get(digest)
        if record is None:
            return None
        if record.expires_at <= self._clock():
            self._store.delete(digest)
            return None
        return WebSession(record.user_id, self._csrf(token), record.expires_at, record.environment)

    def csrf_matches(self, session: WebSession, sent: object) -> bool:
        """Whether a form's ``sent`` CSRF token is the session's."""
        return isinstance(sent, str) and hmac.compare_digest(sent, session.csrf)

    def switch(self, token: str, environment: str | None) -> None:
        """Remember the environment the session's user switched to."""
        self._store.switch(self._digest(token), environment)

    def end(self, token: str | None) -> None:
        """Sign this session out."""
        if token and len(token) <= MAX_TOKEN_CHARS:
            self._store.delete(self._digest(token))

    def end_all(self, user_id: str) -> int:
        """Sign ``user_id`` out of every session, in every browser and server process; how
        many ended."""
        return self._store.delete_for_user(user_id)
