"""/api/v1/memories: what applies to a memory of any layer through the lifecycle: remembering
with dedup and contradiction, feedback, and undoing a lifecycle action."""

from __future__ import annotations

from fastapi import APIRouter, status
from pydantic import Field

from engram.api.deps import ActorDep, EngramDep
from engram.api.routers._memories import EnvQuery
from engram.api.schemas import AnyNewMemory
from engram.lifecycle.feedback import FeedbackKind, FeedbackOutcome
from engram.lifecycle.report import WriteOutcome
from engram.limits import MAX_REASON_CHARS, InputModel
from engram.models import Memory
from engram.service.feedback import give_feedback

router = APIRouter(tags=["memories"])


class FeedbackIn(InputModel):
    kind: FeedbackKind = Field(description="helpful +0.1 confidence, outdated -0.25, wrong -0.5")
    note: str = Field(
        default="", max_length=MAX_REASON_CHARS, description="What was wrong or what changed"
    )


@router.post(
    "/remember",
    status_code=status.HTTP_201_CREATED,
    summary="Store a memory through dedup and contradiction (merged, superseded or queued)",
)
def remember(
    body: AnyNewMemory, engram: EngramDep, actor: ActorDep, environment: EnvQuery = None
) -> WriteOutcome:
    return engram.lifecycle.remember(body, actor, environment)


@router.post("/{memory_id}/feedback", summary="Helpful, wrong or outdated: moves its confidence")
def feedback(
    memory_id: str, body: FeedbackIn, engram: EngramDep, actor: ActorDep
) -> FeedbackOutcome:
    return give_feedback(engram.memories, memory_id, body.kind, actor, body.note)


@router.post("/{memory_id}/undo", summary="Undo the lifecycle action that last changed it")
def undo(memory_id: str, engram: EngramDep, actor: ActorDep) -> list[Memory]:
    return engram.lifecycle.undo(memory_id, actor)
