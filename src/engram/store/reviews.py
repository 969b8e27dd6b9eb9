"""The storage seam for the lifecycle's review queue (the items are in
:mod:`engram.lifecycle.reviews`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.store.accounts import Audit


class ReviewStore(Protocol):
    def put_review(self, item: ReviewItem, audit: Audit = ()) -> None:
        """Insert the item, or replace the one with its id (how an item is resolved), with the
        audit entries in the same transaction."""
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
