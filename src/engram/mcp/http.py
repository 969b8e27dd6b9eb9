"""Streamable HTTP at ``/mcp`` inside the REST app: the same API keys as ``/api/v1``, and the
OAuth access tokens of Engram's own authorization server (:mod:`engram.oauth`) when it runs.

A client says which project it works in with the ``X-Engram-Project`` header (what
``engram mcp-config --http`` writes): calls that name no environment use that project's
environment, created on first use, as every other edge does (``engram.capture.which``).

A request without a valid key or token gets 401 with ``WWW-Authenticate`` pointing at the
protected resource metadata (RFC 9728, served at ``/.well-known/oauth-protected-resource`` and
``…/mcp``, naming the authorization server when there is one); a request whose ``Origin`` is
not this server's gets 403 (DNS rebinding).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread
from fastapi import FastAPI
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import AuthSettings
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from engram.accounts import KEY_PREFIX
from engram.actors import LOCAL_USER, Actor
from engram.capture.which import PROJECT_HEADER, PROJECT_PATTERN
from engram.config import ServerSettings, is_loopback
from engram.errors import Unauthenticated
from engram.mcp.binding import INTERFACE, Binding, request_project, token_for
from engram.mcp.server import build_server
from engram.service import Engram

PATH = "/mcp"
METADATA = "/.well-known/oauth-protected-resource"


class KeyVerifier(TokenVerifier):
    """Engram API keys as OAuth bearer tokens: unknown, malformed or revoked is None (401).
    Any other token goes to ``oauth`` (the authorization server's verifier), if there is one."""

    def __init__(self, engram: Engram, oauth: TokenVerifier | None = None) -> None:
        self._engram = engram
        self._oauth = oauth

    def _check(self, token: str) -> AccessToken | None:
        try:
            return token_for(self._engram.accounts.authenticate(token, INTERFACE))
        except Unauthenticated:
            return None

    async def verify_token(self, token: str) -> AccessToken | None:
        if self._oauth is not None and not token.startswith(KEY_PREFIX):
            return await self._oauth.verify_token(token)
        return await anyio.to_thread.run_sync(self._check, token)


def base_url(settings: ServerSettings) -> str:
    return settings.base_url


def transport_security(settings: ServerSettings) -> TransportSecuritySettings:
    """Host and Origin allow-lists (DNS rebinding protection): the loopback names on a loopback
    bind, plus the public URL's host and any allowed hosts. A server on another address needs
    a key on every request, which a rebinding page cannot present: there the lists apply only
    when some are configured, so that clients may reach it under any name (a proxy, an IP)."""
    extra = list(settings.allowed_hosts)
    if settings.public_url:
        parsed = urlsplit(settings.public_url)
        extra.append(parsed.netloc.rsplit("@", 1)[-1])
    hosts = ["127.0.0.1", "localhost", "[::1]"] if is_loopback(settings.host) else []
    if not hosts and not extra:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts += extra
    patterns = [p for h in hosts for p in ((h,) if _has_port(h) else (h, f"{h}:*"))]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=patterns,
        allowed_origins=[f"{s}://{p}" for p in patterns for s in ("http", "https")],
    )


def _has_port(host: str) -> bool:
    return host.rsplit("]", 1)[-1].count(":") == 1


def protected_resource_metadata(
    resource: str, authorization_server: str | None = None, scopes: Sequence[str] = ()
) -> ASGIApp:
    """RFC 9728 metadata naming only what exists: the resource, how to present a token, and
    the authorization server (Engram itself, :mod:`engram.oauth`) with its scopes when it
    runs. Without one it names no ``authorization_servers`` (the field is optional): API keys
    are issued with ``engram keys create``."""
    body: dict[str, Any] = {"resource": resource, "bearer_methods_supported": ["header"]}
    if authorization_server is not None:
        body["authorization_servers"] = [authorization_server]
        body["scopes_supported"] = list(scopes)
        body["resource_name"] = "Engram"

    def handle(request: Request) -> Response:
        return JSONResponse(body, headers={"Cache-Control": "public, max-age=3600"})

    return cors_middleware(handle, ["GET", "OPTIONS"])


_HEADER = PROJECT_HEADER.lower().encode("latin-1")
_PROJECT_RE = re.compile(PROJECT_PATTERN)


class WithProject:
    """Sets :data:`request_project` from the request's ``X-Engram-Project`` header (the SDK
    carries context variables to the tool call); a malformed value gets 400. (A class, not a
    function: Starlette would read a function as a request-response endpoint.)"""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        raw = headers.get(_HEADER)
        if raw is None:
            await self.inner(scope, receive, send)
            return
        value = raw.decode("latin-1").strip()
        if not _PROJECT_RE.match(value):
            problem = (
                f"{PROJECT_HEADER} must be an environment name (a-z, 0-9, '_.-', 64 at most), "
                "its id, or owner/name for one shared with you"
            )
            await JSONResponse({"detail": problem}, status_code=400)(scope, receive, send)
            return
        reset = request_project.set(value)
        try:
            await self.inner(scope, receive, send)
        finally:
            request_project.reset(reset)


def mount(
    app: FastAPI,
    engram: Engram,
    settings: ServerSettings,
    *,
    oauth: TokenVerifier | None = None,
    authorization_server: str | None = None,
    scopes: Sequence[str] = (),
) -> None:
    """Serve MCP at ``/mcp`` (and the metadata routes) and run its session manager in the app's
    lifespan. Without auth (loopback only), every request acts as the local owner. With
    ``oauth``, tokens that are not API keys are checked by it, and the metadata names
    ``authorization_server`` and its ``scopes``."""
    sessions = attach(
        app,
        engram,
        settings,
        oauth=oauth,
        authorization_server=authorization_server,
        scopes=scopes,
    )
    run_in_lifespan(app, sessions)


def run_in_lifespan(app: FastAPI, sessions: StreamableHTTPSessionManager) -> None:
    """Run ``sessions`` (from :func:`attach`) for as long as the app's lifespan."""
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with sessions.run():
            ctx: AbstractAsyncContextManager[Any] = outer(a)
            async with ctx as state:
                yield state

    app.router.lifespan_context = lifespan


def attach(
    app: FastAPI,
    engram: Engram,
    settings: ServerSettings,
    *,
    oauth: TokenVerifier | None = None,
    authorization_server: str | None = None,
    scopes: Sequence[str] = (),
) -> StreamableHTTPSessionManager:
    """The routes of :func:`mount`, added to a running app too; the caller runs the returned
    session manager (``async with sessions.run()``) before a request reaches them."""
    binding = Binding(engram, Actor(LOCAL_USER, INTERFACE))
    if settings.auth:
        base = base_url(settings)
        auth = AuthSettings(
            issuer_url=AnyHttpUrl(base),
            resource_server_url=AnyHttpUrl(base + PATH),
            validate_token_resource=False,  # the verifier checks the key itself
        )
        server = build_server(binding, token_verifier=KeyVerifier(engram, oauth), auth=auth)
    else:
        server = build_server(binding)
    mcp_app = server.streamable_http_app(
        streamable_http_path=PATH,
        transport_security=transport_security(settings),
        # with several server processes, a session's next request may reach another one: each
        # request then stands alone (the tools keep no state between calls)
        stateless_http=settings.workers > 1,
    )
    if settings.auth:
        metadata = protected_resource_metadata(
            base_url(settings) + PATH, authorization_server, scopes
        )
        for path in (METADATA, METADATA + PATH):
            app.router.routes.append(Route(path, metadata, methods=["GET", "OPTIONS"]))
    # routes, not a mount at "/": the REST app keeps its own 404 and 405 answers
    served = WithProject(mcp_app)
    for route in mcp_app.routes:
        path = getattr(route, "path", "")
        if not path.startswith(METADATA):  # served above, without the SDK's version
            app.router.routes.append(Route(path, served, include_in_schema=False))
    return server.session_manager
