"""Feedback on a memory from whoever used it: helpful, wrong or outdated. It moves the memory's
confidence (which ranks search and context) and records why, as a new version."""

from __future__ import annotations

from engram.accounts import Role
from engram.actors import Actor
from engram.errors import InvalidInput
from engram.lifecycle.feedback import STEPS, FeedbackKind, FeedbackOutcome
from engram.models import MemoryPatch, Status
from engram.service.memories import MemoryService


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
