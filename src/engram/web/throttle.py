"""How many failed sign-ins the dashboard allows before it stops checking passwords for a
while (each check is an Argon2id hash, and each failure a guess).

Failures are counted in a sliding :data:`FAILURE_WINDOW`, three ways:

- per user name *and* client address (:data:`MAX_FAILURES`): a person mistyping, or one
  attacker guessing one account, is stopped; everyone else behind the same proxy or NAT, and
  the same user signing in from elsewhere, is not;
- per user name from any address (:data:`NAME_FAILURES`): guesses at one account spread over
  many addresses;
- across the server (:data:`ALL_FAILURES`): guesses spread over many names and addresses.

The client address is the one uvicorn reports: behind a reverse proxy it is the proxy's, unless
uvicorn trusts the proxy's ``X-Forwarded-For`` (it does for ``FORWARDED_ALLOW_IPS``, by
default ``127.0.0.1`` and ``::1``: a proxy on the same machine). The counts live in the server
process.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from engram.errors import Saturated

MAX_FAILURES = 5
"""Failed sign-ins allowed per user name and client address in :data:`FAILURE_WINDOW`."""
NAME_FAILURES = 20
"""Failed sign-ins allowed per user name, from every address together."""
ALL_FAILURES = 200
"""Failed sign-ins allowed across the server."""
FAILURE_WINDOW = 900.0


class SignInThrottle:
    """The recent failures of one server process (at most :data:`ALL_FAILURES` are kept: past
    that nothing is checked, so nothing more fails)."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._failures: deque[tuple[float, str, str]] = deque()
        self._lock = threading.Lock()

    def _recent(self, now: float) -> deque[tuple[float, str, str]]:
        while self._failures and now - self._failures[0][0] > FAILURE_WINDOW:
            self._failures.popleft()
        return self._failures

    def check(self, name: str, address: str) -> None:
        """:class:`~engram.errors.Saturated` (429, with the wait) when a limit is reached for
        this name and address."""
        key = name.strip().lower()
        now = self._now()
        with self._lock:
            recent = self._recent(now)
            counted = (
                (MAX_FAILURES, [t for t, n, a in recent if n == key and a == address]),
                (NAME_FAILURES, [t for t, n, _ in recent if n == key]),
                (ALL_FAILURES, [t for t, _, _ in recent]),
            )
        # a limit lifts when the oldest of its last ``limit`` failures leaves the window
        waits = [FAILURE_WINDOW - (now - t[-limit]) for limit, t in counted if len(t) >= limit]
        if waits:
            wait = int(max(waits)) + 1
            raise Saturated(f"too many failed sign-ins; try again in {wait} s", retry_after=wait)

    def failed(self, name: str, address: str) -> None:
        now = self._now()
        with self._lock:
            self._recent(now).append((now, name.strip().lower(), address))
