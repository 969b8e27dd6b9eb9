"""Structured JSON logs on stderr and Prometheus metrics for the server."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram

log = logging.getLogger("engram.api")

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


def route_template(request: Request) -> str:
    """The matched path with its parameters put back as ``{name}`` ('unmatched' for a 404)."""
    if request.scope.get("route") is None:
        return "unmatched"
    path: str = request.scope["path"]
    for name, value in request.scope.get("path_params", {}).items():
        path = path.replace(f"/{value}", "/{" + name + "}", 1)
    return path


Handler = Callable[[Request], Awaitable[Response]]


def observe(metrics: Metrics) -> Callable[[Request, Handler], Awaitable[Response]]:
    """Middleware: count, time and log every request by its route template (not its raw path,
    so ids never blow up label cardinality)."""

    async def middleware(request: Request, call_next: Handler) -> Response:
        start = time.perf_counter()
        response = await call_next(request)
        elapsed = time.perf_counter() - start
        route = route_template(request)
        metrics.requests.labels(request.method, route, str(response.status_code)).inc()
        metrics.latency.labels(request.method, route).observe(elapsed)
        log.info(
            "request",
            extra={
                "method": request.method,
                "route": route,
                "status": response.status_code,
                "ms": round(elapsed * 1000, 2),
            },
        )
        return response

    return middleware
