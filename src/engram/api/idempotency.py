"""``Idempotency-Key`` on every write of the REST API: a repeat returns the first answer.

A ``POST`` or ``PATCH`` under ``/api/v1`` (except the read-only ``/search`` and ``/context``
ones) may carry ``Idempotency-Key: <1-255 visible ASCII characters>``, fresh for each
operation. The key is the caller's own (keys are per user) for 24 hours:

- the first request with it runs, and its answer (status and body) is kept;
- a repeat of the same request (method, path, query and body) returns that answer with
  ``Idempotent-Replayed: true`` and changes nothing;
- the same key with another request is refused (422), and so is a repeat while the first is
  still running (409 with ``Retry-After``: try again shortly);
- if the server stopped while the first was running, a repeat runs it again when it had
  changed nothing, and otherwise answers 409 (it was carried out; its answer was lost), never
  carrying it out twice (see :mod:`engram.store.idempotency`).

A failed request that changed nothing (4xx, 5xx) keeps no answer: the key may be used again.
Implemented once, as ASGI middleware around the routes, and documented in the OpenAPI as a
header parameter of each operation it applies to.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import anyio.to_thread
from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engram.actors import LOCAL_USER
from engram.api.errors import error_response
from engram.config import ServerSettings
from engram.errors import Conflict, EngramError, InvalidInput
from engram.service import Engram
from engram.store.idempotency import CURRENT, IdempotencyStore, InFlight, Reservation

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"
RETENTION = timedelta(hours=24)
LEASE = timedelta(minutes=10)
"""A reservation held by a process on another machine counts as running for this long."""
PRUNE_EVERY = 600.0
METHODS = frozenset({"POST", "PATCH"})
PREFIX = "/api/v1/"
READ_ONLY = frozenset({"/api/v1/search", "/api/v1/context/assemble", "/api/v1/context/preview"})
_KEY = re.compile(r"[\x21-\x7e]{1,255}")

HOST = socket.gethostname()
OWNER = f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"
"""This process, as the owner of the reservations it runs."""
_STRIPES = 64
"""Locks that reservations of this process take, by key."""

PARAMETER: dict[str, Any] = {
    "name": HEADER,
    "in": "header",
    "required": False,
    "description": "Makes this request safe to retry: a fresh value per operation (a UUID). "
    "A repeat with the same key within 24 h returns the first answer (with "
    "'Idempotent-Replayed: true') and stores nothing; the same key with a different request "
    "is 422; a repeat while the first is still running is 409 with Retry-After.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
}


def applies(method: str, path: str) -> bool:
    return method in METHODS and path.startswith(PREFIX) and path not in READ_ONLY


def fingerprint(method: str, path: str, query: bytes, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query, body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


def owner_running(owner: str, running: set[tuple[str, str]], user_id: str, key: str) -> bool:
    """Whether the process that holds a reservation may still be running it."""
    if owner == OWNER:
        return (user_id, key) in running
    host, _, rest = owner.partition(":")
    if host != HOST:
        return True  # another machine: until the lease ends
    pid = int(rest.partition(":")[0] or 0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()  # our pid with another nonce: an earlier run of this process


@dataclass
class _Answer:
    status: int = 500
    content_type: str = "application/json"
    body: bytes = b""


class IdempotencyMiddleware:
    def __init__(self, app: ASGIApp, engram: Engram, settings: ServerSettings) -> None:
        self.app = app
        self.engram = engram
        self.settings = settings
        self._store: IdempotencyStore | None = None
        self._running: set[tuple[str, str]] = set()
        # a reservation is committed, then registered in ``_running``: a duplicate of this
        # process that read the row between the two took its owner (this process) for one
        # that no longer runs it, took it over and ran it too; reserving and registering under
        # the key's lock closes that window (locks striped by key: a reservation waiting on
        # another transaction's row holds up only the keys of its stripe)
        self._reserving = tuple(threading.Lock() for _ in range(_STRIPES))
        self._pruned = 0.0

    @property
    def store(self) -> IdempotencyStore:
        if self._store is None:
            self._store = self.engram.store.idempotency
        return self._store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not applies(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope["headers"]}
        raw = headers.get(HEADER.lower())
        if raw is None:
            await self.app(scope, receive, send)
            return
        key = raw.decode("latin-1")
        if not _KEY.fullmatch(key):
            await _send(send, InvalidInput(f"{HEADER} must be 1 to 255 visible ASCII characters"))
            return
        body = await _read_body(receive)
        replay = _replaying(body)
        user_id = await anyio.to_thread.run_sync(self._user, headers.get("authorization"))
        if user_id is None:  # the route answers 401
            await self.app(scope, replay, send)
            return
        inflight = InFlight(user_id, key, OWNER)
        query = scope.get("query_string", b"")
        fp = fingerprint(scope["method"], scope["path"], query, body)
        try:
            found = await anyio.to_thread.run_sync(self._reserve, inflight, fp)
        except EngramError as exc:
            await _send(send, exc)
            return
        if found is not None:
            await self._repeat(send, inflight, found, fp)
            return
        await self._run(scope, replay, send, inflight)

    def _user(self, authorization: bytes | None) -> str | None:
        if not self.settings.auth:
            return LOCAL_USER
        scheme, _, token = (authorization or b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer":
            return None
        try:
            return self.engram.accounts.authenticate(token.strip(), "api").user_id
        except EngramError:
            return None

    def _reserve(self, inflight: InFlight, fp: str) -> Reservation | None:
        now = self.engram.clock()
        if time.monotonic() - self._pruned > PRUNE_EVERY:
            self._pruned = time.monotonic()
            self.store.prune(now - RETENTION)
        with self._lock(inflight):
            return self._reserve_locked(inflight, fp, now)

    def _lock(self, inflight: InFlight) -> threading.Lock:
        return self._reserving[hash((inflight.user_id, inflight.key)) % _STRIPES]

    def _reserve_locked(self, inflight: InFlight, fp: str, now: datetime) -> Reservation | None:
        while True:
            found = self.store.reserve(
                inflight.user_id, inflight.key, fp, OWNER, now, now - RETENTION
            )
            if found is None:
                self._running.add((inflight.user_id, inflight.key))
                return None
            if found.fingerprint != fp or found.answered or found.executed:
                return found
            if self._held(found, inflight, now):
                return found
            if self.store.take_over(inflight.user_id, inflight.key, found.owner, OWNER):
                self._running.add((inflight.user_id, inflight.key))
                return None
            # it changed state meanwhile: look again

    def _held(self, found: Reservation, inflight: InFlight, now: datetime) -> bool:
        if now - found.created_at > LEASE:
            return False
        return owner_running(found.owner, self._running, inflight.user_id, inflight.key)

    async def _repeat(self, send: Send, inflight: InFlight, found: Reservation, fp: str) -> None:
        key = inflight.key
        now = self.engram.clock()
        if found.fingerprint != fp:
            await _send(
                send,
                InvalidInput(
                    f"{HEADER} {key!r} was already used in the last 24 h for a different "
                    "request (method, path, query or body): use a fresh key for each operation",
                    idempotency_key=key,
                ),
            )
        elif found.answered:
            await _replay(send, found)
        elif found.executed and not self._held(found, inflight, now):
            # its owner keeps the answer, then stops holding it: it may have been answered
            # since ``found`` was read
            again = await anyio.to_thread.run_sync(self._look_again, inflight, fp)
            if again is not None and again.answered:
                await _replay(send, again)
                return
            await _send(
                send,
                Conflict(
                    f"the request with {HEADER} {key!r} was carried out, but the server "
                    "stopped before its answer was kept; it is not carried out again",
                    idempotency_key=key,
                    state="carried_out",
                ),
            )
        else:
            await _send(
                send,
                Conflict(
                    f"a request with {HEADER} {key!r} is still running; retry shortly",
                    idempotency_key=key,
                    state="in_progress",
                ),
                retry_after=1,
            )

    def _look_again(self, inflight: InFlight, fp: str) -> Reservation | None:
        """The reservation as it is now (``None``: gone; the one reading it made is dropped)."""
        now = self.engram.clock()
        user_id, key = inflight.user_id, inflight.key
        with self._lock(inflight):
            found = self.store.reserve(user_id, key, fp, OWNER, now, now - RETENTION)
            if found is None:
                self.store.release(user_id, key, OWNER)
        return found

    async def _run(self, scope: Scope, receive: Receive, send: Send, inflight: InFlight) -> None:
        answer = _Answer()
        start: Message | None = None
        chunks: list[bytes] = []
        finished = False

        async def capture(message: Message) -> None:
            nonlocal start, finished
            if message["type"] == "http.response.start":
                start = message
                answer.status = int(message["status"])
                for k, v in message.get("headers", ()):
                    if k.lower() == b"content-type":
                        answer.content_type = v.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answer.body = b"".join(chunks)
                    finished = True
                    await anyio.to_thread.run_sync(self._finish, inflight, answer)
                    assert start is not None
                    await send(start)
                    await send({"type": "http.response.body", "body": answer.body})

        token = CURRENT.set(inflight)
        try:
            await self.app(scope, receive, capture)
        except BaseException:
            if not finished:  # the app raised before answering: the server answers 500
                body = json.dumps(
                    {"error": {"code": "internal_error", "message": "internal server error"}}
                )
                await anyio.to_thread.run_sync(self._finish, inflight, _Answer(body=body.encode()))
            raise
        finally:
            CURRENT.reset(token)

    def _finish(self, inflight: InFlight, answer: _Answer) -> None:
        """Keep the answer of a request that succeeded or changed something; else drop the
        reservation so that the key may be used again."""
        user_id, key = inflight.user_id, inflight.key
        CURRENT.set(None)  # (this worker's copy of the context) keeping it is not the write
        try:
            if answer.status < 400 or inflight.wrote:
                kept = _without_token(answer, key)
                self.store.answer(user_id, key, OWNER, kept.status, kept.content_type, kept.body)
            else:
                self.store.release(user_id, key, OWNER)
        finally:
            self._running.discard((user_id, key))


def _without_token(answer: _Answer, key: str) -> _Answer:
    """The answer to keep: one that holds an API token (a key created or rotated) is kept as a
    409 naming the key, never with the token (shown once; the store holds only digests)."""
    try:
        data = json.loads(answer.body) if answer.content_type == "application/json" else None
    except ValueError:
        return answer
    if not (isinstance(data, dict) and isinstance(data.get("token"), str)):
        return answer
    key_id = (data.get("key") or {}).get("id") if isinstance(data.get("key"), dict) else None
    error = {
        "code": Conflict.code,
        "message": f"the request with {HEADER} {key!r} was carried out: it issued API key "
        f"{key_id!r}, whose token is shown only once and not kept; revoke that key if its "
        "token was lost",
        "details": {"idempotency_key": key, "state": "carried_out", "key_id": key_id},
    }
    return _Answer(409, "application/json", json.dumps({"error": error}).encode())


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replaying(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")  # pragma: no cover

    return receive


async def _send(send: Send, exc: EngramError, retry_after: int | None = None) -> None:
    from engram.api.errors import status_of

    response = error_response(status_of(exc), exc.code, exc.message, dict(exc.details))
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - responses do not read
    return {"type": "http.disconnect"}


async def _replay(send: Send, found: Reservation) -> None:
    body = found.body or b""
    await send(
        {
            "type": "http.response.start",
            "status": found.status,
            "headers": [
                (b"content-type", (found.content_type or "application/json").encode("latin-1")),
                (b"content-length", str(len(body)).encode()),
                (REPLAYED.lower().encode(), b"true"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def document(app: FastAPI) -> None:
    """Add the header parameter to every operation it applies to in the OpenAPI."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                if isinstance(operation, dict) and applies(method.upper(), path):
                    operation.setdefault("parameters", []).append(PARAMETER)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def install(app: FastAPI, engram: Engram, settings: ServerSettings) -> None:
    app.add_middleware(IdempotencyMiddleware, engram=engram, settings=settings)
    document(app)
