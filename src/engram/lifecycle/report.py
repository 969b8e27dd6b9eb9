"""What the lifecycle tells its callers: the outcome of one write and of a maintenance run."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from engram.models import Memory


class WriteAction(StrEnum):
    """What one write did (:attr:`WriteOutcome.action`)."""

    CREATED = "created"
    MERGED = "merged"
    SUPERSEDED = "superseded"
    OUTDATED = "outdated"
    """Said before the stored fact it contradicts: kept in the history, superseded by it."""
    QUEUED = "queued"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WriteOutcome(_Frozen):
    """The result of :meth:`LifecycleService.remember`.

    ``memory`` is the memory that now holds the fact: the new one, or for a merge the existing
    one that absorbed it (``absorbed_into``). The new wording of a merge is kept as its own
    record with status ``merged`` (``merged_record``), which ``restore`` brings back.
    """

    action: WriteAction
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

    def summary(self) -> WriteSummary:
        return WriteSummary(
            action=self.action,
            absorbed_into=self.absorbed_into,
            merged_record=self.merged_record,
            superseded=self.superseded,
            review_id=self.review_id,
            reason=self.reason,
        )

    def stored(self) -> StoredMemory:
        """The memory with what happened beside it (what the create routes answer)."""
        # redactions: what was removed from what this write sent (a merge's absorbing memory
        # has none of its own)
        fields = {**dict(self.memory), "redactions": self.redactions}
        return StoredMemory(**fields, outcome=self.summary())


class WriteSummary(_Frozen):
    """What a write did, beside the memory a create route returns."""

    action: WriteAction = Field(
        description="created: stored as a new memory; merged: a duplicate, absorbed by the "
        "existing fact `absorbed_into` (the new wording kept as `merged_record`); superseded: "
        "stored, and the older fact `superseded` retired; outdated: said before the stored "
        "fact it contradicts, so stored already superseded by it (the memory's "
        "`superseded_by`), which stays active; queued: stored, and the pair sent to the review "
        "queue (`review_id`)."
    )
    absorbed_into: str | None = None
    merged_record: str | None = None
    superseded: str | None = None
    review_id: str | None = None
    reason: str = Field(default="", description="Why: the similarity and the rule that decided.")


class StoredMemory(Memory):
    """A memory as a create route returns it: the memory that now holds the fact (for a merge,
    the existing one that absorbed it) and ``outcome``, what the write did."""

    outcome: WriteSummary


class LifecycleEvent(_Frozen):
    """One change a maintenance run made (or, in a dry run, would make)."""

    memory_id: str
    other_id: str | None = None
    reason: str = ""
    created: list[str] = Field(default_factory=list)
    """Compaction: the ids of the facts made from the episode (none in a dry run, which makes
    none: ``new_facts`` says what it would make)."""
    new_facts: list[str] = Field(default_factory=list)
    """Compaction: the text of each fact made (in a dry run: that a real run would make)."""
    reinforced: list[str] = Field(default_factory=list)
    """Compaction: the existing facts the episode reinforced, each once."""


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
    """Episode ``memory_id`` archived; ``created`` lists the facts made from it (``new_facts``
    their text), ``reinforced`` the existing ones it reinforced."""
    seconds: float = 0.0

    @property
    def changes(self) -> int:
        return sum(
            len(x)
            for x in (self.merged, self.superseded, self.queued, self.flagged, self.compacted)
        )
