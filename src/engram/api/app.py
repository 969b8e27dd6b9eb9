"""The app factory: the REST API over one :class:`Engram`, configured by :class:`ServerSettings`.
``engram serve`` runs it with MCP mounted beside it (:func:`engram.servers.http_app`).

Adding a resource is one module in ``engram.api.routers`` exposing ``router`` and one line in
:data:`RESOURCES`; the module is imported on the first request under its prefix
(:mod:`engram.api.lazy`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi

import engram
from engram.api import capture_route, docs, errors, idempotency
from engram.api.guard import RequestLimits
from engram.api.lazy import LazyRoutes, expanded
from engram.api.observability import Metrics, Observe
from engram.api.routers import health
from engram.api.shedding import Shed
from engram.config import ServerSettings
from engram.service import Engram

API_PREFIX = "/api/v1"

RESOURCES: tuple[tuple[str, str], ...] = (
    # (the router's module in engram.api.routers, its prefix): routing tries them in this
    # order, and each is imported on the first request under its prefix (engram.api.lazy), or
    # when a server loads them all once it has answered; the hot paths first
    ("search", "/search"),
    ("context", "/context"),
    ("facts", "/facts"),
    ("episodes", "/episodes"),
    ("procedures", "/procedures"),
    ("environments", "/environments"),
    ("users", "/users"),
    ("keys", "/keys"),
    ("oauth", "/oauth"),
    ("audit", "/audit"),
    ("maintenance", "/maintenance"),
    ("memories", "/memories"),
    ("reviews", "/reviews"),
    ("soul", "/soul"),
    ("capture", "/capture"),
    ("profile", "/profile"),
    ("providers", "/providers"),
    ("imports", "/imports"),
    ("handoffs", "/handoffs"),
    ("extraction", ""),
)
PATHS = {"extraction": ("/extract", "/conversations")}
"""The paths of a router without a prefix of its own (every route of it under one of them)."""
HOT = ("search", "context")
"""Imported as the app is built: a first search or assembly does not wait for its router."""


class EngramAPI(FastAPI):
    """FastAPI, documenting the routers :class:`LazyRoutes` holds as if they were included."""

    def openapi(self) -> dict[str, Any]:
        if not self.openapi_schema:
            self.openapi_schema = get_openapi(
                title=self.title,
                version=self.version,
                openapi_version=self.openapi_version,
                description=self.description,
                routes=expanded(self.routes),  # imports every router not yet imported
            )
        return self.openapi_schema


def resources() -> list[LazyRoutes]:
    """The API's routers, each imported when first needed (the hot ones at once)."""
    lazy = []
    for name, prefix in RESOURCES:

        def include(holder: APIRouter, router: APIRouter, prefix: str = prefix) -> None:
            responses = errors.ERROR_RESPONSES
            holder.include_router(router, prefix=API_PREFIX + prefix, responses=responses)

        paths = [API_PREFIX + p for p in PATHS.get(name, (prefix,))]
        lazy.append(LazyRoutes.of(f"engram.api.routers.{name}", paths, include))
        if name in HOT:
            lazy[-1].routes  # noqa: B018 (imports it)
    return lazy


def create_app(service: Engram, settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    app = EngramAPI(
        title="Engram",
        version=engram.__version__,
        description="A self-hosted persistent memory layer for AI. Every /api/v1 request needs "
        "'Authorization: Bearer <API key>'. MCP is served at /mcp; remote MCP clients sign in "
        "there with OAuth 2.1 (metadata at /.well-known/oauth-authorization-server and "
        "/.well-known/oauth-protected-resource/mcp; /register, /authorize with PKCE S256, "
        "/token, /revoke), and their grants are listed and revoked under /api/v1/oauth/grants.",
        docs_url=None,  # engram.api.docs serves /docs from local assets
        openapi_url="/openapi.json",
    )
    app.state.engram = service
    app.state.settings = settings
    app.state.metrics = Metrics()
    errors.install(app)
    idempotency.install(app, service, settings)  # Idempotency-Key on every write
    capture_route.mount(app, service, settings)  # the hooks' route: ahead of routing, idempotency
    app.add_middleware(RequestLimits)  # size limits first: nothing oversized is reserved
    # 429 beyond the in-flight bound
    app.add_middleware(Shed, limit=settings.max_in_flight, metrics=app.state.metrics)
    app.add_middleware(Observe, metrics=app.state.metrics)  # outermost: counts replays too
    app.include_router(health.router)
    app.router.routes.extend(resources())
    docs.mount(app)  # /docs from local assets, no CDN
    return app  # engram.servers.http_app mounts MCP at /mcp beside it
