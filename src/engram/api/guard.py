"""The HTTP limits, checked before a request reaches a route: a URL longer than
:data:`~engram.limits.MAX_URL_BYTES` is 414, headers over
:data:`~engram.limits.MAX_HEADER_BYTES` are 431, a body over
:data:`~engram.limits.MAX_BODY_BYTES` is 413 (an uploaded export,
:data:`~engram.limits.MAX_IMPORT_BYTES`), and a NUL (``%00``) in the path or query is 422,
each with the one error body.

A refused request's body is read and discarded (up to :data:`_DRAIN_BYTES`) before the answer,
so the connection stays usable and the client reads the status rather than a reset.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

from engram.api.errors import error_response
from engram.limits import (
    IMPORT_UPLOAD_PATH,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_IMPORT_BYTES,
    MAX_URL_BYTES,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_DRAIN_BYTES = 8 * MAX_BODY_BYTES
"""How much of a refused body is read and discarded; past it the connection is closed."""


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int = MAX_BODY_BYTES) -> None:
        super().__init__(413, f"the request body is over the limit of {limit} bytes")


def body_limit(scope: Scope) -> int:
    """The largest body the request may carry: an upload of an export may be large."""
    if scope.get("method") == "POST" and scope["path"] == IMPORT_UPLOAD_PATH:
        return MAX_IMPORT_BYTES
    return MAX_BODY_BYTES


class RequestLimits:
    """ASGI middleware enforcing the HTTP limits."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _refusal(scope)
        if refusal is not None:
            status, code, message = refusal
            drained = await _drain(receive, 0)
            response = error_response(status, code, message)
            if not drained:
                response.headers["Connection"] = "close"
            await response(scope, receive, send)
            return
        await self.app(scope, _bounded(receive, body_limit(scope)), send)


def _refusal(scope: Scope) -> tuple[int, str, str] | None:
    path: bytes = scope.get("raw_path") or scope["path"].encode()
    query: bytes = scope.get("query_string", b"")
    if len(path) + len(query) > MAX_URL_BYTES:
        return 414, "uri_too_long", f"the URL is over the limit of {MAX_URL_BYTES} bytes"
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    if sum(len(name) + len(value) + 4 for name, value in headers) > MAX_HEADER_BYTES:
        return 431, "headers_too_large", f"the headers are over {MAX_HEADER_BYTES} bytes"
    if b"%00" in path or b"%00" in query or b"\x00" in path:
        return 422, "invalid_input", "the URL holds a NUL character (%00): NUL is not allowed"
    for name, value in headers:
        limit = body_limit(scope)
        if name == b"content-length" and value.isdigit() and int(value) > limit:
            return 413, "payload_too_large", BodyTooLarge(limit).detail
    return None


async def _drain(receive: Receive, seen: int) -> bool:
    """Read the rest of the body; False if it is too long to read out."""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return False
        seen += len(message.get("body", b""))
        if seen > _DRAIN_BYTES:
            return False
        if not message.get("more_body", False):
            return True


def _bounded(receive: Receive, limit: int) -> Receive:
    """``receive`` that raises 413 once the body passes the limit (after draining the rest)."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                if message.get("more_body", False):
                    await _drain(receive, seen)
                raise BodyTooLarge(limit)
        return message

    return wrapped
