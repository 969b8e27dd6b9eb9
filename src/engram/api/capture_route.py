"""``POST /api/v1/capture/events`` ahead of FastAPI's routing: the route every hook of every
session posts to, at hundreds of requests a second, so it skips what it does not need.

FastAPI would walk its nested routers to find it (the largest cost of a small request here),
then run each dependency and the body model in turns of the thread pool. This route is the
first of the application's routes and matches by method and exact path; it reads the body,
validates it with the same model (:class:`engram.api.routers.capture.EventsIn`) and queues the
events for the group commit, whose writer authenticates the caller exactly as every route does
(:func:`engram.api.deps.authenticate`), once for the requests of a group with the same key:
no turn of the thread pool and no database read of its own per request.
Everything around the router still applies (request limits, idempotency keys, metrics, the
error bodies: a domain error or a validation error raised here is answered by the same
handlers, with the same ``loc`` as FastAPI's). The FastAPI route stays declared, for the
OpenAPI document and for an app built without this one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import weakref
from functools import partial
from typing import Annotated, Any, ClassVar

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from pydantic import StringConstraints, TypeAdapter, ValidationError
from starlette._utils import get_route_path
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match, NoMatchFound
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.api.deps import authenticate, bearer_token
from engram.api.idempotency import HEADER as IDEMPOTENCY_HEADER
from engram.api.observability import LOG_LEVEL
from engram.api.routers.capture import EventsIn
from engram.capture.which import PROJECT_HEADER, PROJECT_MAX_CHARS, PROJECT_PATTERN
from engram.config import ServerSettings
from engram.limits import MAX_BODY_BYTES
from engram.service import Engram
from engram.service.capture import IngestResult

EVENTS_PATH = "/api/v1/capture/events"
_PROJECT = TypeAdapter(
    Annotated[str, StringConstraints(max_length=PROJECT_MAX_CHARS, pattern=PROJECT_PATTERN)]
)
_PROJECT_KEY = PROJECT_HEADER.lower().encode("latin-1")
_IDEMPOTENCY_KEY = IDEMPOTENCY_HEADER.lower().encode("latin-1")


class CaptureEventsRoute(BaseRoute):
    path = path_format = EVENTS_PATH
    methods = frozenset({"POST"})

    def __init__(self, engram: Engram, settings: ServerSettings) -> None:
        self.engram = engram
        self.settings = settings

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and get_route_path(scope) == EVENTS_PATH  # as every route matches (root_path off)
        ):
            return Match.FULL, {"route": self, "path_params": {}}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        token, project = _caller(headers)
        data = _body(await _read_body(receive), headers.get(b"content-type"))
        try:
            future = self.submit(token, project, data)
        except _Invalid as invalid:
            await run_in_threadpool(authenticate, self.engram, self.settings, token, project)
            raise RequestValidationError(invalid.errors) from None
        await _accepted(send, await future)

    def submit(
        self, token: str | None, project: str | None, data: Any
    ) -> asyncio.Future[IngestResult]:
        """As FastAPI solves the route: the project header, then the caller (not when the
        header is invalid), then the body; every validation error reported at once. A valid
        request is queued at once, its caller authenticated by the group-commit writer (once
        for the requests of a group that carry the same key); an invalid one is answered
        after its caller was authenticated here, as FastAPI would."""
        errors: list[dict[str, Any]] = []
        if project is not None:
            try:
                _PROJECT.validate_python(project)
            except ValidationError as exc:
                errors += _located(exc, "header", PROJECT_HEADER)
        header_invalid = bool(errors)
        events: list[dict[str, Any]] = []
        if data is _MISSING:
            errors.append({"type": "missing", "loc": ("body",), "msg": "Field required"})
        else:
            try:
                events = EventsIn.model_validate(data, from_attributes=True).events
            except ValidationError as exc:
                errors += _located(exc, "body")
        if header_invalid:  # the caller is not authenticated then
            raise RequestValidationError(errors)
        if errors:
            raise _Invalid(errors)
        caller = partial(authenticate, self.engram, self.settings, token, project)
        answer = _LoopAnswer()
        self.engram.capture.submit_for(events, (token, project), caller, answer)
        return answer.future


class _LoopAnswer:
    """Hands the writer thread's outcome to the event loop's future, with no thread-safe
    future to wrap: the outcomes of one group reach the loop in one call."""

    __slots__ = ("future", "outcomes")

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.future: asyncio.Future[IngestResult] = loop.create_future()
        self.outcomes = _Outcomes.of(loop)

    def set_result(self, result: IngestResult, /) -> None:
        self.outcomes.add(self.future, result, None)

    def set_exception(self, exception: BaseException, /) -> None:
        self.outcomes.add(self.future, None, exception)


_Outcome = tuple["asyncio.Future[IngestResult]", IngestResult | None, BaseException | None]


class _Outcomes:
    """The outcomes waiting for one event loop: the first of a batch wakes the loop, which
    settles every one queued by then."""

    _by_loop: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Outcomes]] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.waiting: list[_Outcome] = []

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _Outcomes:
        found = cls._by_loop.get(loop)
        if found is None:
            found = cls._by_loop[loop] = cls(loop)
        return found

    def add(
        self,
        future: asyncio.Future[IngestResult],
        result: IngestResult | None,
        exception: BaseException | None,
    ) -> None:
        with self.lock:
            self.waiting.append((future, result, exception))
            if len(self.waiting) > 1:  # the loop is called already
                return
        try:
            self.loop.call_soon_threadsafe(self._settle_all)
        except RuntimeError:  # the loop closed: nobody waits for these any more
            with self.lock:
                self.waiting.clear()

    def _settle_all(self) -> None:
        with self.lock:
            waiting, self.waiting = self.waiting, []
        for outcome in waiting:
            _settle(*outcome)


def _settle(
    future: asyncio.Future[IngestResult],
    result: IngestResult | None,
    exception: BaseException | None,
) -> None:
    if future.done():  # cancelled: the client went away
        return
    if exception is not None:
        future.set_exception(exception)
    elif result is not None:
        future.set_result(result)


class _Invalid(Exception):
    """A body FastAPI would refuse once the caller is authenticated."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors


_MISSING: Any = object()


def _headers(scope: Scope) -> dict[bytes, bytes]:
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:  # the first of each, as Starlette's headers.get
        headers.setdefault(name, value)
    return headers


def _caller(headers: dict[bytes, bytes]) -> tuple[str | None, str | None]:
    """The bearer token and the project header of a request."""
    authorization = headers.get(b"authorization")
    token = None if authorization is None else bearer_token(authorization.decode("latin-1"))
    raw_project = headers.get(_PROJECT_KEY)
    return token, None if raw_project is None else raw_project.decode("latin-1")


async def _accepted(send: Send, result: IngestResult) -> None:
    answer = b'{"stored": %d, "duplicates": %d}' % (result.stored, result.duplicates)
    await send(
        {
            "type": "http.response.start",
            "status": 202,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(answer)).encode("latin-1")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": answer})


class FastCapture:
    """ASGI middleware inside the request limits, load shedding and metrics: a capture request
    that is valid and succeeds is answered here, past the layers that have nothing to do for
    it (idempotency keys, the exception handlers, the routing); any other — an
    ``Idempotency-Key`` header, a body without a ``Content-Length`` within the limit, a bad
    request, a refused caller, a full queue, a failed write — goes on the way every request
    goes, with its body, and is answered there (it changed nothing here). The route is
    counted under its template, as when the router matched it, and its request log line is
    written at debug level (hooks post hundreds a second; a refused request logs at info)."""

    def __init__(self, app: ASGIApp, route: CaptureEventsRoute) -> None:
        self.app = app
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or get_route_path(scope) != EVENTS_PATH
        ):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        length = headers.get(b"content-length", b"")
        if _IDEMPOTENCY_KEY in headers or not length.isdigit() or int(length) > MAX_BODY_BYTES:
            await self.app(scope, receive, send)
            return
        try:
            raw = await _read_body(receive)
        except HTTPException:  # the client went away before its body came: nobody to answer
            return
        try:
            token, project = _caller(headers)
            future = self.route.submit(token, project, _body(raw, headers.get(b"content-type")))
            result = await future
        except Exception:
            await self.app(scope, _replaying(raw, receive), send)
            return
        scope["route"], scope["path_params"] = self.route, {}
        scope[LOG_LEVEL] = logging.DEBUG  # hundreds a second: counted, logged only at debug
        await _accepted(send, result)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives the body read already, then waits as the original."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


def _body(raw: bytes, content_type: bytes | None) -> Any:
    """The request body as FastAPI reads it for a JSON body parameter: decoded when the
    content type is JSON, the bytes as they are otherwise, missing when empty."""
    if not raw:
        return _MISSING
    kind = (content_type or b"").split(b";", 1)[0].strip().lower()
    major, _, minor = kind.partition(b"/")
    if major != b"application" or not (minor == b"json" or minor.endswith(b"+json")):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        error = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
                 "input": {}, "ctx": {"error": exc.msg}}  # fmt: skip
        raise RequestValidationError([error], body=exc.doc) from exc
    except (ValueError, RecursionError):
        raise HTTPException(400) from None  # the one "could not be read as JSON" answer


def _located(exc: ValidationError, *where: str) -> list[dict[str, Any]]:
    """Pydantic's errors as FastAPI reports them for a request: their ``loc`` under ``where``."""
    return [{**e, "loc": (*where, *e.get("loc", ()))} for e in exc.errors(include_url=False)]


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HTTPException(400)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def mount(app: FastAPI, engram: Engram, settings: ServerSettings) -> None:
    """Put the route first among the application's routes, and its fast path in the middleware
    stack as it is so far (call it after the middleware it must stay inside of)."""
    route = CaptureEventsRoute(engram, settings)
    app.router.routes.insert(0, route)
    app.add_middleware(FastCapture, route=route)
