"""The web dashboard, served by ``engram serve`` on the API's origin under ``/ui``: server-rendered
pages (Jinja2) over the same services as the REST API, signed in with a user's password.

Every response under ``/ui`` carries a strict Content-Security-Policy (only this origin's
scripts, styles, images and forms; no framing). ``engram.servers.http_app`` mounts it.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.datastructures import MutableHeaders
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.errors import EngramError, InvalidInput, validation_lines
from engram.service import Engram
from engram.web.pages import HERE, PREFIX, SignInRequired, error_page
from engram.web.session import WebAuth

__all__ = ["CSP", "mount"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
"""Only this origin, no inline script or style, no framing."""

SCREENS = (
    "login",
    "memories",
    "memory",
    "reviews",
    "soul",
    "context",
    "sessions",
    "live",
    "handoffs",
    "transfer",
    "environments",
    "keys",
    "users",
    "audit",
)
"""The screens' modules in engram.web, imported on the first request under /ui (or when a
server loads every route once it has answered: :mod:`engram.api.lazy`)."""

STATIC = PREFIX + "/static"
Handler = Callable[[Request, Exception], Awaitable[Response] | Response]


def _ours(request: Request) -> bool:
    return _is_ours(request.url.path)


def _is_ours(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


class SecurityHeaders:
    """Plain ASGI: the dashboard's pages get their security headers; every other request (the
    API, the hooks' capture route, MCP) passes through untouched, at no cost per request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not _is_ours(path):
            await self.app(scope, receive, send)
            return
        static = path.startswith(STATIC)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = CSP
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                headers["X-Frame-Options"] = "DENY"
                if not static:  # pages hold CSRF tokens and data
                    headers["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, with_headers)


def _html_errors(app: FastAPI) -> None:
    """Errors on a dashboard page answer a page; elsewhere the API's JSON as before."""
    api_error: Handler = app.exception_handlers[EngramError]
    api_invalid: Handler = app.exception_handlers[RequestValidationError]

    async def engram_error(request: Request, exc: Exception) -> Response:
        answer = await _call(api_error, request, exc)
        if not _ours(request):
            return answer
        assert isinstance(exc, EngramError)
        return error_page(request, exc, answer.status_code)  # the API's status for it

    async def invalid(request: Request, exc: Exception) -> Response:
        if not _ours(request):
            return await _call(api_invalid, request, exc)
        assert isinstance(exc, RequestValidationError)
        what = "; ".join(validation_lines(exc.errors(), skip=1))
        return error_page(request, InvalidInput(f"check the form: {what}"), 422)

    async def sign_in(request: Request, exc: Exception) -> Response:
        target = request.url.path if request.method == "GET" else PREFIX + "/"
        return RedirectResponse(f"{PREFIX}/login?next={target}", status_code=303)

    app.add_exception_handler(EngramError, engram_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(SignInRequired, sign_in)


async def _call(handler: Handler, request: Request, exc: Exception) -> Response:
    result = handler(request, exc)
    return await result if isinstance(result, Awaitable) else result


Defer = Callable[[Sequence[str], Callable[[APIRouter], None]], BaseRoute]
"""Given the paths routes will have and a function adding them to a router, one route that
stands for them (``engram.api.lazy.LazyRoutes``: built on the first request under a path)."""


def mount(app: FastAPI, engram: Engram, defer: Defer | None = None) -> None:
    """Serve the dashboard at /ui (and / redirecting to it), its assets at /ui/static; the
    screens' routes through ``defer`` when given (imported when first needed), else at once."""
    app.state.web_templates = Jinja2Templates(directory=HERE / "templates")
    app.state.web_auth = WebAuth(engram.accounts, engram.web_sessions, engram.sign_ins)
    _html_errors(app)

    app.add_middleware(SecurityHeaders)

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse(PREFIX + "/", status_code=307)

    app.mount(STATIC, StaticFiles(directory=HERE / "static"), name="web-static")

    def screens(holder: APIRouter) -> None:
        from engram.web import transfer

        app.state.web_uploads = transfer.Uploads()
        for name in SCREENS:
            router = importlib.import_module(f"engram.web.{name}").router
            holder.include_router(router, prefix=PREFIX, include_in_schema=False)

    if defer is None:
        screens(app.router)
    else:
        app.router.routes.append(defer([PREFIX], screens))
