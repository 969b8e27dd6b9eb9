"""Load shedding: at most ``limit`` requests in flight in one server process; one more is
answered at once with 429, ``Retry-After`` and the one error body, rather than queued behind
the others (a queue only makes every answer late).

A request is in flight from its arrival until its response starts, so a long stream (MCP's
event stream, an import's progress) holds no slot once it has answered. Health and metrics
(``/healthz``, ``/readyz``, ``/metrics``) are never shed: a probe must see a busy server as up.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.api.errors import error_response
from engram.api.observability import Metrics

RETRY_AFTER_S = 1
"""What a shed request is told to wait (seconds, the unit of ``Retry-After``)."""
NEVER_SHED = frozenset({"/healthz", "/readyz", "/metrics"})


class Shed:
    """ASGI middleware that bounds the requests in flight (``limit`` 0: unbounded), and
    reports them in ``metrics`` (``engram_http_requests_in_flight``, ``…_shed_total``)."""

    def __init__(self, app: ASGIApp, limit: int, metrics: Metrics) -> None:
        self.app = app
        self.limit = limit
        self.metrics = metrics
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.limit or scope["path"] in NEVER_SHED:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            self.metrics.shed.inc()
            response = error_response(
                429,
                "saturated",
                f"the server has {self.in_flight} requests in flight, its limit: retry in "
                f"{RETRY_AFTER_S} s",
                {"in_flight": self.in_flight, "retry_after": RETRY_AFTER_S},
            )
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
            await response(scope, receive, send)
            return
        self.in_flight += 1
        self.metrics.in_flight.set(self.in_flight)
        holding = True

        def release() -> None:
            nonlocal holding
            if holding:
                holding = False
                self.in_flight -= 1
                self.metrics.in_flight.set(self.in_flight)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            release()
