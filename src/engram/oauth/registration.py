"""Dynamic client registration (RFC 7591, ``POST /register``), bounded: anyone may register a
client, so one address may register at most :data:`PER_ADDRESS` clients an hour, a
registration is at most :data:`MAX_REGISTRATION_BYTES`, and the clients no user has consented
to yet are capped and cleaned up by the service (:meth:`OAuthService.register_client
<engram.service.oauth.OAuthService.register_client>`). A refusal is an OAuth error body: 429
with ``Retry-After``, or 413.

The per-address counts live in the server process; the cap is in the store, shared by every
process.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from mcp.server.auth.handlers.register import RegistrationHandler
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engram.errors import Saturated

PER_ADDRESS = 20
"""Registrations allowed from one client address per :data:`WINDOW`."""
WINDOW = 3600.0
MAX_REGISTRATION_BYTES = 16 * 1024
"""A client's registration (its metadata as JSON); real ones are well under 2 KiB."""
TRACKED = 10_000
"""Addresses counted at once; past that the counts start again (memory stays bounded)."""


def _refusal(status: int, error: str, description: str, retry_after: int | None) -> Response:
    headers = {"Cache-Control": "no-store"}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers=headers)


class BoundedRegistration:
    """The SDK's registration handler behind the bounds (``handle`` is the endpoint)."""

    def __init__(
        self, handler: RegistrationHandler, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._handler = handler
        self._now = now
        self._seen: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _wait(self, address: str) -> int | None:
        """Seconds until ``address`` may register again (None: now, and this one counts)."""
        now = self._now()
        with self._lock:
            if len(self._seen) >= 1024:  # forget addresses quiet for a whole window
                for key in [k for k, times in self._seen.items() if now - times[-1] > WINDOW]:
                    del self._seen[key]
                if len(self._seen) >= TRACKED:
                    self._seen.clear()
            times = self._seen.setdefault(address, deque())
            while times and now - times[0] > WINDOW:
                times.popleft()
            if len(times) >= PER_ADDRESS:
                return int(WINDOW - (now - times[0])) + 1
            times.append(now)
            return None

    async def handle(self, request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405, headers={"Allow": "POST"})
        address = request.client.host if request.client else ""
        wait = self._wait(address)
        if wait is not None:
            return _refusal(
                429,
                "temporarily_unavailable",
                f"too many client registrations from {address}: at most {PER_ADDRESS} an hour; "
                f"try again in {wait} s",
                wait,
            )
        if len(await request.body()) > MAX_REGISTRATION_BYTES:
            return _refusal(
                413,
                "invalid_client_metadata",
                f"the registration is over {MAX_REGISTRATION_BYTES} bytes",
                None,
            )
        try:
            return await self._handler.handle(request)
        except Saturated as exc:
            retry: Any = exc.details.get("retry_after")
            return _refusal(
                429, "temporarily_unavailable", exc.message, int(retry) if retry else None
            )
