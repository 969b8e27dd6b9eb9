"""/api/v1/memories: what applies to a memory of any layer through the lifecycle: remembering
with dedup and contradiction, feedback, and undoing a lifecycle action."""

from __future__ import annotations

from fastapi import APIRouter, status

from engram.api.deps import ActorDep, EngramDep
from engram.api.routers._memories import EnvQuery
from engram.api.schemas import AnyNewMemory
from engram.lifecycle.feedback import FeedbackOutcome
from engram.lifecycle.report import WriteOutcome
from engram.models import Memory
from engram.requests.memories import FeedbackRequest
from engram.service.feedback import give_feedback

router = APIRouter(tags=["memories"])


@router.post(
    "/remember",
    status_code=status.HTTP_201_CREATED,
    summary="Store a memory through dedup and contradiction (merged, superseded, outdated, queued)",
)
def remember(
    body: AnyNewMemory, engram: EngramDep, actor: ActorDep, environment: EnvQuery = None
) -> WriteOutcome:
    return engram.lifecycle.remember(body, actor, environment)


@router.post("/{memory_id}/feedback", summary="Helpful, wrong or outdated: moves its confidence")
def feedback(
    memory_id: str, body: FeedbackRequest, engram: EngramDep, actor: ActorDep
) -> FeedbackOutcome:
    return give_feedback(engram.memories, memory_id, body.kind, actor, body.note)


@router.post("/{memory_id}/undo", summary="Undo the lifecycle action that last changed it")
def undo(memory_id: str, engram: EngramDep, actor: ActorDep) -> list[Memory]:
    """Both sides of a merge (give the merged record or the memory that absorbed it), a
    supersede (either memory), a flag or a compaction; the undone memory first, then every
    other memory changed. An active memory with no such action is a 400."""
    return engram.lifecycle.undo(memory_id, actor)
