"""/api/v1/context: the system-prompt block for a query (the Soul first, then memories)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import Field

from engram.api.deps import ActorDep, EngramDep
from engram.limits import (
    JSON_NUMBER,
    MAX_CONTEXT_TOKENS,
    MAX_QUERY_CHARS,
    MIN_CONTEXT_TOKENS,
    InputModel,
    StrictInt,
)
from engram.retrieval.models import AssembledContext, SearchMode

router = APIRouter(tags=["context"])


Cap = Annotated[int, Field(ge=0, le=1000), JSON_NUMBER] | None
"""A cap on the items of one tier (0-1000); none: as many as fit."""


class ContextIn(InputModel):
    query: str = Field(
        default="", max_length=MAX_QUERY_CHARS, description="empty: a start-of-session brief"
    )
    environment: str | None = Field(default=None, max_length=200)
    max_tokens: StrictInt = Field(default=2000, ge=MIN_CONTEXT_TOKENS, le=MAX_CONTEXT_TOKENS)
    max_facts: Cap = Field(default=None, description="a cap on facts; none: as many as fit")
    max_messages: Cap = Field(default=None, description="a cap on conversation messages")
    max_episodes: Cap = None
    max_procedures: Cap = None
    mode: SearchMode = SearchMode.HYBRID


def _assemble(
    body: ContextIn, engram: EngramDep, actor: ActorDep, preview: bool
) -> AssembledContext:
    return engram.context.assemble(
        actor,
        body.query,
        environment=body.environment,
        max_tokens=body.max_tokens,
        max_facts=body.max_facts,
        max_messages=body.max_messages,
        max_episodes=body.max_episodes,
        max_procedures=body.max_procedures,
        mode=body.mode,
        preview=preview,
    )


@router.post("/assemble", summary="Assemble the context block (counts as an access)")
def assemble(body: ContextIn, engram: EngramDep, actor: ActorDep) -> AssembledContext:
    return _assemble(body, engram, actor, preview=False)


@router.post("/preview", summary="What would be assembled, without counting accesses")
def preview(body: ContextIn, engram: EngramDep, actor: ActorDep) -> AssembledContext:
    return _assemble(body, engram, actor, preview=True)
