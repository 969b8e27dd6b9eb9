"""Password sign-ins, limited: how many failures the dashboard and the OAuth consent page
together allow before they stop checking passwords for a while (each check is an Argon2id
hash, and each failure a guess).

Failures are counted in a sliding :data:`FAILURE_WINDOW`, three ways:

- per user name *and* client address (:data:`MAX_FAILURES`): a person mistyping, or one
  attacker guessing one account, is stopped; everyone else behind the same proxy or NAT, and
  the same user signing in from elsewhere, is not;
- per user name from any address (:data:`NAME_FAILURES`): guesses at one account spread over
  many addresses;
- across the server (:data:`ALL_FAILURES`): guesses spread over many names and addresses.

The counts live in the store (:mod:`engram.store.sign_ins`), so every server process on it
(``engram serve --workers N``, several servers on one PostgreSQL) counts the same guesses and
a restart does not forget them. The client address is the one uvicorn reports: behind a reverse
proxy it is the proxy's, unless uvicorn trusts the proxy's ``X-Forwarded-For`` (it does for
``FORWARDED_ALLOW_IPS``, by default ``127.0.0.1`` and ``::1``: a proxy on the same machine).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.accounts import User
from engram.clock import Clock
from engram.errors import Saturated, Unauthenticated
from engram.service.accounts import AccountService
from engram.store import Store
from engram.store.sign_ins import SignInFailure

MAX_FAILURES = 5
"""Failed sign-ins allowed per user name and client address in :data:`FAILURE_WINDOW`."""
NAME_FAILURES = 20
"""Failed sign-ins allowed per user name, from every address together."""
ALL_FAILURES = 200
"""Failed sign-ins allowed across the server (past that nothing is checked, so nothing more
fails and the store keeps at most about this many)."""
FAILURE_WINDOW = 900.0
"""Seconds a failure counts for."""


class SignInService:
    def __init__(self, store: Store, clock: Clock, accounts: AccountService) -> None:
        self._store = store.sign_ins
        self._clock = clock
        self._accounts = accounts

    def _key(self, name: str) -> str:
        return self._accounts.digest("sign-in:" + name.strip().lower())

    def verify(self, name: str, password: str, address: str) -> User:
        """The user with this name and password. :class:`~engram.errors.Unauthenticated` for a
        wrong pair (and the failure counts); :class:`~engram.errors.Saturated` (429, with the
        wait) once a limit is reached for the name from ``address``, right or wrong."""
        self.check(name, address)
        try:
            return self._accounts.verify_password(name.strip(), password)
        except Unauthenticated:
            self.failed(name, address)
            raise

    def failed(self, name: str, address: str) -> None:
        """Count one failed sign-in of ``name`` from ``address``."""
        now = self._clock()
        window = timedelta(seconds=FAILURE_WINDOW)
        self._store.record(SignInFailure(now, self._key(name), address), now - window)

    def check(self, name: str, address: str) -> None:
        """:class:`~engram.errors.Saturated` when a limit is reached for this name and
        address."""
        key = self._key(name)
        now = self._clock()
        recent = self._store.since(now - timedelta(seconds=FAILURE_WINDOW), ALL_FAILURES)
        counted: tuple[tuple[int, list[datetime]], ...] = (
            (MAX_FAILURES, [f.at for f in recent if f.name == key and f.address == address]),
            (NAME_FAILURES, [f.at for f in recent if f.name == key]),
            (ALL_FAILURES, [f.at for f in recent]),
        )
        # newest first: a limit lifts when the oldest of its last ``limit`` failures leaves
        waits = [
            FAILURE_WINDOW - (now - times[limit - 1]).total_seconds()
            for limit, times in counted
            if len(times) >= limit
        ]
        if waits:
            wait = int(max(waits)) + 1
            raise Saturated(f"too many failed sign-ins; try again in {wait} s", retry_after=wait)
