"""What an import shows before it commits (:class:`ImportPreview`) and what it did
(:class:`ImportReport`): plain data shared by the service, the edges and the SDK."""

from __future__ import annotations

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
    memories_queued: int = Field(0, description="stored and queued for review")
    already_imported: int = Field(0, description="items an earlier import already brought")
    environments_created: list[str] = Field(default_factory=list)
    skipped_total: int = 0
