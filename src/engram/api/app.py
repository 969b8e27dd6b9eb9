"""The app factory: the REST API over one :class:`Engram`, configured by :class:`ServerSettings`.
``engram serve`` runs it with MCP mounted beside it (:func:`engram.servers.http_app`).

Adding a resource is one module in ``engram.api.routers`` exposing ``router`` and one line in
:data:`RESOURCES`.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

import engram
from engram.api import capture_route, docs, errors, idempotency
from engram.api.guard import RequestLimits
from engram.api.observability import Metrics, Observe
from engram.api.routers import (
    audit,
    capture,
    context,
    environments,
    episodes,
    extraction,
    facts,
    handoffs,
    health,
    imports,
    keys,
    maintenance,
    memories,
    oauth,
    procedures,
    profile,
    providers,
    reviews,
    search,
    soul,
    users,
)
from engram.api.shedding import Shed
from engram.config import ServerSettings
from engram.service import Engram

API_PREFIX = "/api/v1"

RESOURCES: tuple[tuple[str, APIRouter], ...] = (
    # routing tries the routers in this order, and a router's handlers are built the first
    # time a request is matched against it: the hot paths first (a first search after start
    # builds these two, not all twenty)
    ("/search", search.router),
    ("/context", context.router),
    ("/facts", facts.router),
    ("/episodes", episodes.router),
    ("/procedures", procedures.router),
    ("/environments", environments.router),
    ("/users", users.router),
    ("/keys", keys.router),
    ("/oauth", oauth.router),
    ("/audit", audit.router),
    ("/maintenance", maintenance.router),
    ("/memories", memories.router),
    ("/reviews", reviews.router),
    ("/soul", soul.router),
    ("/capture", capture.router),
    ("/profile", profile.router),
    ("/providers", providers.router),
    ("/imports", imports.router),
    ("/handoffs", handoffs.router),
    ("", extraction.router),  # /extract and /conversations
)


def create_app(service: Engram, settings: ServerSettings | None = None) -> FastAPI:
    settings = settings or ServerSettings()
    app = FastAPI(
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
    api = APIRouter(responses=errors.ERROR_RESPONSES)
    for prefix, router in RESOURCES:
        api.include_router(router, prefix=prefix)
    app.include_router(api, prefix=API_PREFIX)
    docs.mount(app)  # /docs from local assets, no CDN
    return app  # engram.servers.http_app mounts MCP at /mcp beside it
