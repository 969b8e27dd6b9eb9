"""/api/v1/capture: what the coding-agent hooks (``engram-hook``) post, and the captured
sessions and observations to read back."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from engram.api.deps import ActorDep, EngramDep
from engram.capture.events import (
    MAX_EXTRA,
    MAX_FILES,
    MAX_ID,
    MAX_NAME_CHARS,
    MAX_TEXT_CHARS,
    Agent,
    EventKind,
)
from engram.limits import NONBLANK_PATTERN, InputModel, StrictInt
from engram.models import Memory
from engram.service.capture import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_RECALL_TOKENS,
    MAX_CONTEXT_TOKENS,
    MAX_EVENTS_PER_REQUEST,
)
from engram.store.capture import CapturedSession, Observation

router = APIRouter(tags=["capture"])

_EVENT_DOC = (
    "Captured events, already scrubbed and bounded by the hook: each has agent (claude, codex, "
    "gemini, cursor, opencode), kind (session_start, prompt, tool_use, tool_result, compaction, "
    "stop, session_end, other), session_id, cwd, at (ISO 8601), key (the idempotency key: an "
    "event is stored once per key) and optionally project, hook, text, tool, command, files, "
    "output, failed, detail."
)


_NAME = {"type": "string", "maxLength": MAX_NAME_CHARS}
_LONG = {"type": "string", "maxLength": MAX_TEXT_CHARS}
_SCALAR = {"type": ["string", "number", "boolean"], "maxLength": MAX_NAME_CHARS}
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["agent", "kind", "session_id", "cwd", "at", "key"],
    "additionalProperties": False,
    "properties": {
        "agent": {"type": "string", "enum": [a.value for a in Agent]},
        "kind": {"type": "string", "enum": [k.value for k in EventKind]},
        "session_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID},
        "cwd": {**_NAME, "minLength": 1},
        "at": {"type": "string", "minLength": 1, "maxLength": 64},
        "key": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{8,100}$"},
        "project": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "environment": {"type": ["string", "null"], "maxLength": MAX_NAME_CHARS},
        "files": {"type": "array", "maxItems": MAX_FILES, "items": _NAME},
        "hook": _NAME,
        "tool": _NAME,
        **{name: _LONG for name in ("text", "command", "output", "detail")},
        "failed": {"type": "boolean"},
        "extra": {
            "type": "object",
            "maxProperties": MAX_EXTRA,
            "propertyNames": {"maxLength": MAX_NAME_CHARS},
            "additionalProperties": _SCALAR,
        },
    },
}
"""One event on the wire, as :func:`engram.capture.events.validation_errors` checks it."""


class EventsIn(InputModel):
    events: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=MAX_EVENTS_PER_REQUEST,
        description=_EVENT_DOC,
        json_schema_extra={"items": EVENT_SCHEMA},
    )


class SessionStartIn(EventsIn):
    max_tokens: StrictInt = Field(
        default=DEFAULT_CONTEXT_TOKENS,
        ge=100,
        le=MAX_CONTEXT_TOKENS,
        description="The size of the context block, in tokens",
    )


class Accepted(BaseModel):
    stored: int = Field(description="Events stored now")
    duplicates: int = Field(description="Events whose key was already stored (not stored again)")


class SessionStartOut(Accepted):
    context: str = Field(description="The block the new session starts with ('' when empty)")


@router.post(
    "/events",
    status_code=status.HTTP_202_ACCEPTED,
    summary="Store captured events (answered once they are durable; 429 when saturated)",
)
async def post_events(body: EventsIn, engram: EngramDep, actor: ActorDep) -> Accepted:
    # validation and environment lookups off the event loop; then wait for the group commit
    future = await run_in_threadpool(engram.capture.submit, body.events, actor)
    result = await asyncio.wrap_future(future)
    return Accepted(stored=result.stored, duplicates=result.duplicates)


@router.post(
    "/session-start",
    summary="Store a session's first events and return the context block it starts with",
)
def session_start(body: SessionStartIn, engram: EngramDep, actor: ActorDep) -> SessionStartOut:
    result, block = engram.capture.session_start(body.events, actor, max_tokens=body.max_tokens)
    return SessionStartOut(stored=result.stored, duplicates=result.duplicates, context=block)


class PromptIn(EventsIn):
    max_tokens: StrictInt = Field(
        default=DEFAULT_RECALL_TOKENS,
        ge=50,
        le=MAX_CONTEXT_TOKENS,
        description="The size of the recall block, in tokens",
    )


@router.post(
    "/prompt",
    summary="Store a prompt's events and return the memories relevant to it that the session "
    "has not been shown yet (the hooks call it when ENGRAM_RECALL=on)",
)
def prompt(body: PromptIn, engram: EngramDep, actor: ActorDep) -> SessionStartOut:
    result, block = engram.capture.prompt_recall(body.events, actor, max_tokens=body.max_tokens)
    return SessionStartOut(stored=result.stored, duplicates=result.duplicates, context=block)


@router.get("/sessions", summary="Captured sessions of one environment, most recent first")
def list_sessions(
    engram: EngramDep,
    actor: ActorDep,
    environment: Annotated[str | None, Query(description="Name or id; default: yours")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> list[CapturedSession]:
    return engram.capture.list_sessions(actor, environment, limit=limit)


@router.get("/sessions/{session_id}", summary="One captured session")
def get_session(session_id: str, engram: EngramDep, actor: ActorDep) -> CapturedSession:
    return engram.capture.get_session(session_id, actor)


@router.get("/sessions/{session_id}/observations", summary="A session's observations, in order")
def observations(
    session_id: str,
    engram: EngramDep,
    actor: ActorDep,
    after: Annotated[int, Query(ge=0, description="Continue after this seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> list[Observation]:
    return engram.capture.observations(session_id, actor, limit=limit, after=after)


@router.post(
    "/sessions/{session_id}/summarize",
    summary="Write or refresh the session's episode now (it is also written at stop, at end "
    "and after an idle timeout)",
)
def summarize(session_id: str, engram: EngramDep, actor: ActorDep) -> Memory | None:
    return engram.capture.summarize(session_id, actor)


@router.get("/search", summary="Captured observations matching the words of a query")
def search(
    engram: EngramDep,
    actor: ActorDep,
    q: Annotated[
        str,
        Query(min_length=1, max_length=1000, pattern=NONBLANK_PATTERN, description="Plain text"),
    ],
    environment: Annotated[str | None, Query(description="Name or id; default: yours")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> list[Observation]:
    return engram.capture.search(q, actor, environment, limit=limit)
