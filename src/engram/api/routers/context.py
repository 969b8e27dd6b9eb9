"""/api/v1/context: the system-prompt block for a query (the Soul first, then memories)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from engram.api.deps import ActorDep, EngramDep
from engram.retrieval.models import AssembledContext, SearchMode

router = APIRouter(tags=["context"])


class ContextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(default="", max_length=2000, description="empty: a start-of-session brief")
    environment: str | None = None
    max_tokens: int = Field(default=2000, ge=1, le=1_000_000)
    max_facts: int | None = Field(
        default=None, ge=0, le=1000, description="a cap on facts; none: as many as fit"
    )
    max_messages: int | None = Field(
        default=None, ge=0, le=1000, description="a cap on conversation messages"
    )
    max_episodes: int | None = Field(default=None, ge=0, le=1000)
    max_procedures: int | None = Field(default=None, ge=0, le=1000)
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
