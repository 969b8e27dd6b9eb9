"""The storage seam for the lifecycle's review queue: pairs of memories that may contradict
each other, waiting for a person to decide."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from pydantic import BaseModel, ConfigDict


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


class ReviewStore(Protocol):
    def put_review(self, item: ReviewItem) -> None:
        """Insert the item, or replace the one with its id (how an item is resolved)."""
        ...

    def get_review(self, review_id: str) -> ReviewItem | None: ...

    def list_reviews(
        self,
        environment_ids: Sequence[str],
        statuses: Sequence[ReviewStatus] = (ReviewStatus.OPEN,),
        *,
        limit: int = 100,
    ) -> list[ReviewItem]:
        """Items in these environments (all when empty) with these statuses, oldest first."""
        ...
