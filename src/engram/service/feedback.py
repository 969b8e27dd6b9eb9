"""Feedback on a memory from whoever used it: helpful, wrong or outdated. It moves the memory's
confidence (which ranks search and context) and records why, as a new version."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from engram.accounts import Role
from engram.actors import Actor
from engram.errors import InvalidInput
from engram.models import Memory, MemoryPatch, Status
from engram.service.memories import MemoryService


class FeedbackKind(StrEnum):
    HELPFUL = "helpful"
    WRONG = "wrong"
    OUTDATED = "outdated"


STEPS: dict[FeedbackKind, float] = {
    FeedbackKind.HELPFUL: +0.1,
    FeedbackKind.OUTDATED: -0.25,
    FeedbackKind.WRONG: -0.5,
}
"""How far each kind moves confidence (clamped to [0, 1])."""


class FeedbackOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: FeedbackKind
    confidence_before: float
    confidence_after: float
    memory: Memory


def give_feedback(
    memories: MemoryService, memory_id: str, kind: FeedbackKind, actor: Actor, note: str = ""
) -> FeedbackOutcome:
    """Raise (helpful) or lower (wrong, outdated) a memory's confidence, as a new version whose
    reason names the feedback; ``restore`` undoes it."""
    memory = memories.get(memory_id, actor, Role.WRITER)
    if memory.status is Status.DELETED:
        raise InvalidInput(f"memory {memory_id!r} is deleted; restore it before giving feedback")
    before = memory.confidence
    after = round(min(1.0, max(0.0, before + STEPS[kind])), 4)
    reason = f"feedback: {kind.value}" + (f" ({note})" if note else "")
    updated = memories.update(memory_id, MemoryPatch(confidence=after), actor, reason)
    return FeedbackOutcome(
        kind=kind, confidence_before=before, confidence_after=after, memory=updated
    )
