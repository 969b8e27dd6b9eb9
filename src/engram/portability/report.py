"""What an import shows before it commits (:class:`ImportPreview`) and what it did
(:class:`ImportReport`), and an import job as the REST API runs it (:class:`ImportJob`):
plain data shared by the service, the edges and the SDK."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class SourceCounts(_Frozen):
    """What one source format in the file holds."""

    format: str
    conversations: int = 0
    messages: int = 0
    memories: int = 0
    environments: int = 0


class Duplicates(_Frozen):
    """How much of the file is already stored (an earlier import of the same export)."""

    conversations: int = 0
    messages: int = 0
    memories: int = 0


class SkippedItem(_Frozen):
    file: str
    entry: str
    reason: str


class ImportPreview(_Frozen):
    file: str
    environment: str = Field(description="the target environment's name")
    formats: list[str]
    sources: list[SourceCounts]
    duplicates: Duplicates
    new_environments: list[str] = Field(
        default_factory=list, description="environments the import would create (projects)"
    )
    sample: list[str] = Field(default_factory=list, description="a few items, as text")
    skipped: list[SkippedItem] = Field(default_factory=list, description="the first 50")
    skipped_total: int = 0


class ImportReport(_Frozen):
    file: str
    environment: str
    formats: list[str]
    conversations: int = Field(0, description="conversations stored or added to")
    messages_added: int = 0
    memories_created: int = Field(0, description="new memories (imported or extracted)")
    memories_merged: int = Field(0, description="merged into a memory already stored")
    memories_superseded: int = 0
    memories_outdated: int = Field(
        0, description="said before a stored fact that replaces them: kept as its history"
    )
    memories_queued: int = Field(0, description="stored and queued for review")
    already_imported: int = Field(0, description="items an earlier import already brought")
    environments_created: list[str] = Field(default_factory=list)
    skipped_total: int = 0
    redactions: dict[str, int] = Field(
        default_factory=dict,
        description="Secrets the scrubber removed before anything was stored, as kind -> count "
        "(rotate them: they were in the export)",
    )


class JobState(StrEnum):
    PREVIEWED = "previewed"
    """Uploaded and read; nothing stored yet. Commit it, or delete it."""
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """Stopped by an error or a restart; committing again resumes it."""


class ImportJob(_Frozen):
    id: str
    file: str = Field(description="the uploaded file's name")
    environment: str = Field(description="the target environment's name")
    state: JobState
    created_at: datetime
    updated_at: datetime
    done: int = Field(0, description="items (memories and messages) handled so far")
    total: int = Field(0, description="items in all")
    preview: ImportPreview
    report: ImportReport | None = Field(None, description="once done: what the import did")
    error: str | None = Field(None, description="once failed: why")
    csv_map: dict[str, str] = Field(default_factory=dict, description="CSV column mapping")
    user_id: str = Field(description="whose job this is")
