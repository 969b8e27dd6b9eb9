"""The lifecycle's review queue: pairs of memories that may contradict each other, waiting for
a person to decide (stored through :class:`engram.store.reviews.ReviewStore`), and the rule for
when an open item has nothing left to decide."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from engram.models import Memory, Status


class ReviewStatus(StrEnum):
    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"
    CLOSED = "closed"
    """Nothing left to decide: a memory of the pair was superseded, merged or deleted since."""


class ReviewItem(BaseModel):
    """``memory_id`` (the newer fact) may contradict ``other_id`` (the older one). Accepting
    supersedes the older; dismissing keeps both."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    environment_id: str
    memory_id: str
    other_id: str
    kind: str = "contradiction"
    reason: str = ""
    similarity: float = 0.0
    created_at: datetime
    status: ReviewStatus = ReviewStatus.OPEN
    resolved_at: datetime | None = None
    resolved_by: str | None = None


def stale_reason(item: ReviewItem, memories: Mapping[str, Memory]) -> str | None:
    """Why ``item`` can no longer be decided (a memory of the pair is gone or no longer
    active), or None while both are active."""
    for memory_id in (item.memory_id, item.other_id):
        memory = memories.get(memory_id)
        if memory is None:
            return f"{memory_id} no longer exists"
        if memory.status is not Status.ACTIVE:
            how = {
                Status.SUPERSEDED: f" by {memory.superseded_by}",
                Status.MERGED: f" into {memory.merged_into}",
            }.get(memory.status, "")
            return f"{memory_id} is {memory.status.value}{how}"
    return None
