"""The lifecycle's review queue: pairs of memories that may contradict each other, waiting for
a person to decide (stored through :class:`engram.store.reviews.ReviewStore`)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class ReviewStatus(StrEnum):
    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


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
