"""Structured JSON logs on stderr and Prometheus metrics for the server."""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("engram.api")
LOG_LEVEL = "engram.log_level"
"""A request's scope key: the level its request log line is written at (default info)."""

_STD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and any ``extra`` fields."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update({k: v for k, v in vars(record).items() if k not in _STD_ATTRS})
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def configure_logging(level: str = "info") -> None:
    """Send engram and uvicorn logs to stderr as JSON (call once, at the entry point)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name in ("engram", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    # requests are logged once, by the middleware below, with their route and duration
    logging.getLogger("uvicorn.access").disabled = True


class Metrics:
    """The server's Prometheus metrics, in a registry of their own (one per app)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "engram_http_requests_total",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "engram_http_request_duration_seconds",
            "HTTP request latency by method and route template",
            ["method", "route"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "engram_http_requests_in_flight",
            "Requests of this process not answered yet (load shedding bounds them)",
            registry=self.registry,
        )
        self.shed = Counter(
            "engram_http_requests_shed_total",
            "Requests answered 429 because too many were in flight",
            registry=self.registry,
        )


def route_template(scope: Scope) -> str:
    """The matched path with its parameters put back as ``{name}`` ('unmatched' for a 404)."""
    if scope.get("route") is None:
        return "unmatched"
    path: str = scope["path"]
    for name, value in scope.get("path_params", {}).items():
        path = path.replace(f"/{value}", "/{" + name + "}", 1)
    return path


class Observe:
    """ASGI middleware: count, time and log every request by its route template (not its raw
    path, so ids never blow up label cardinality). A request is measured up to the start of its
    response (a streamed body is not waited for); one whose handler raised before answering
    is not counted (the error handler outside answers it).

    Plain ASGI rather than an ``@app.middleware("http")`` function: Starlette runs those in a
    task group with memory streams per request, a cost every capture event paid.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                self._record(scope, int(message["status"]), time.perf_counter() - start)
            await send(message)

        await self.app(scope, receive, sending)

    def _record(self, scope: Scope, status: int, elapsed: float) -> None:
        route, method = route_template(scope), scope["method"]
        self.metrics.requests.labels(method, route, str(status)).inc()
        self.metrics.latency.labels(method, route).observe(elapsed)
        level = scope.get(LOG_LEVEL, logging.INFO)
        if not log.isEnabledFor(level):
            return
        log.log(
            level,
            "request",
            extra={
                "method": method,
                "route": route,
                "status": status,
                "ms": round(elapsed * 1000, 2),
            },
        )
