"""What the lifecycle tells its callers: the outcome of one write and of a maintenance run."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from engram.models import Memory


class Outcome(StrEnum):
    CREATED = "created"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    QUEUED = "queued"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WriteOutcome(_Frozen):
    """The result of :meth:`LifecycleService.remember`.

    ``memory`` is the memory that now holds the fact: the new one, or for a merge the existing
    one that absorbed it (``absorbed_into``). The new wording of a merge is kept as its own
    record with status ``merged`` (``merged_record``), which ``restore`` brings back.
    """

    action: Outcome
    memory: Memory
    absorbed_into: str | None = None
    merged_record: str | None = None
    superseded: str | None = None
    review_id: str | None = None
    reason: str = ""
    redactions: dict[str, int] = Field(
        default_factory=dict,
        description="Secrets the scrubber removed from the text before it was stored, as "
        "kind -> count (empty when there were none).",
    )


class LifecycleEvent(_Frozen):
    """One change a maintenance run made (or, in a dry run, would make)."""

    memory_id: str
    other_id: str | None = None
    reason: str = ""
    created: list[str] = Field(default_factory=list)


class MaintenanceReport(_Frozen):
    dry_run: bool
    environment_ids: list[str]
    scanned: int = 0
    merged: list[LifecycleEvent] = Field(default_factory=list)
    """``memory_id`` was merged into ``other_id``."""
    superseded: list[LifecycleEvent] = Field(default_factory=list)
    """``memory_id`` (older) was superseded by ``other_id``."""
    queued: list[LifecycleEvent] = Field(default_factory=list)
    """``memory_id`` may contradict ``other_id``: sent to the review queue."""
    flagged: list[LifecycleEvent] = Field(default_factory=list)
    compacted: list[LifecycleEvent] = Field(default_factory=list)
    """Episode ``memory_id`` archived; ``created`` lists the facts made from it."""
    seconds: float = 0.0

    @property
    def changes(self) -> int:
        return sum(
            len(x)
            for x in (self.merged, self.superseded, self.queued, self.flagged, self.compacted)
        )
