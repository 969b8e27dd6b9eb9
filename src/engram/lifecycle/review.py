"""The review queue's rules: when an open item has nothing left to decide."""

from __future__ import annotations

from collections.abc import Mapping

from engram.models import Memory, Status
from engram.store.reviews import ReviewItem


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
