"""How the SDK retries: every call is safe to send again, because reads are reads, ``PUT`` and
``DELETE`` are idempotent, and each ``POST`` and ``PATCH`` carries a fresh ``Idempotency-Key``
(the server answers a repeat with the first answer and stores nothing). So a lost connection, a
timeout, 429, 503 and 409 "still running" (the first attempt of the same key is under way) are
retried, a bounded number of times, with exponential backoff and full jitter (or the server's
``Retry-After`` when it is shorter than the cap)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass

import httpx

from engram.sdk._calls import Call

HEADER = "Idempotency-Key"
READ_ONLY = frozenset({"/api/v1/search", "/api/v1/context/assemble", "/api/v1/context/preview"})
RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class Retry:
    """``attempts`` tries in all (1: never retry); waits up to ``backoff * 2**n`` seconds,
    never more than ``max_backoff``."""

    attempts: int = 5
    backoff: float = 0.25
    max_backoff: float = 8.0

    def step(self, attempt: int, outcome: httpx.Response | Exception) -> httpx.Response | float:
        """After try ``attempt`` (1, 2, ...): the answer to read, or seconds to wait before the
        next try; a connection error left after the last try is raised."""
        response = outcome if isinstance(outcome, httpx.Response) else None
        wait = self.wait(attempt, response)
        if wait is not None:
            return wait
        if not isinstance(outcome, httpx.Response):
            raise outcome
        return outcome

    def wait(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to wait before trying again after try ``attempt`` (1, 2, ...) ended with
        ``response`` (None: no answer, the connection failed); None to stop."""
        if attempt >= self.attempts:
            return None
        if response is not None and not _retryable(response):
            return None
        bound = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        hinted = _retry_after(response)
        if hinted is not None:
            return min(self.max_backoff, hinted)
        return random.uniform(bound / 2, bound)


def headers_for(call: Call[object]) -> dict[str, str]:
    """A fresh key for each write call (the same on each of its retries)."""
    if call.method in ("POST", "PATCH") and call.path not in READ_ONLY:
        return {HEADER: str(uuid.uuid4())}
    return {}


def _retryable(response: httpx.Response) -> bool:
    if response.status_code in RETRY_STATUSES:
        return True
    if response.status_code != 409 or HEADER.lower() not in response.request.headers:
        return False
    try:
        details = response.json()["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(details, dict) and details.get("state") == "in_progress"


def _retry_after(response: httpx.Response | None) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: use the backoff
