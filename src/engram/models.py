"""The memory model: three layers (fact, episode, procedure) sharing one identity and history.

Value objects are immutable pydantic models; the service layer creates new states with
``model_copy(update=...)`` and the store persists them together with an append-only version.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

Score = Annotated[float, Field(ge=0.0, le=1.0)]

MAX_CONTENT_CHARS = 20_000
MAX_TAGS = 32
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_TAG_RE = re.compile(r"^[^\s,][^,]{0,63}$")


class Layer(StrEnum):
    FACT = "fact"
    EPISODE = "episode"
    PROCEDURE = "procedure"


class Status(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    MERGED = "merged"
    FLAGGED = "flagged"
    ARCHIVED = "archived"
    DELETED = "deleted"


class Source(StrEnum):
    MANUAL = "manual"
    EXTRACTED = "extracted"
    IMPORT = "import"
    API = "api"
    AGENT = "agent"
    CONSOLIDATED = "consolidated"


class Action(StrEnum):
    """What a version records."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    RESTORE = "restore"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    FLAG = "flag"
    ARCHIVE = "archive"
    ACCESS = "access"


ORDERS = (
    "-updated_at",
    "updated_at",
    "-created_at",
    "created_at",
    "-importance",
    "importance",
    "-access_count",
)
"""The orders a listing can take; a leading '-' means descending."""

BUILTIN_CATEGORIES = ("preference", "fact", "decision", "project", "general")


def validate_category(value: str) -> str:
    value = value.strip().lower()
    if not _CATEGORY_RE.match(value):
        raise ValueError(
            f"category {value!r} must be 1-40 characters: a lowercase letter, then letters, "
            "digits, '_' or '-'"
        )
    return value


def validate_tags(value: list[str]) -> list[str]:
    out: list[str] = []
    for tag in value:
        tag = tag.strip().lower()
        if not _TAG_RE.match(tag):
            raise ValueError(f"tag {tag!r} must be 1-64 characters without commas")
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(out)}")
    return out


def validate_content(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("content must not be empty")
    if len(value) > MAX_CONTENT_CHARS:
        raise ValueError(f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
    return value


def validate_env_name(value: str) -> str:
    value = value.strip().lower()
    if not _NAME_RE.match(value):
        raise ValueError(
            f"environment name {value!r} must be 1-64 characters: lowercase letters, digits, "
            "'_', '.' or '-', starting with a letter or digit"
        )
    return value


Content = Annotated[str, AfterValidator(validate_content)]
Category = Annotated[str, AfterValidator(validate_category)]
Tags = Annotated[list[str], AfterValidator(validate_tags)]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EpisodeDetails(_Frozen):
    """What an episode adds to a memory: the session it summarises."""

    period_start: datetime | None = None
    period_end: datetime | None = None
    participants: list[str] = Field(default_factory=list)
    conversation_id: str | None = None
    agent: str | None = None
    session_id: str | None = None
    key_decisions: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _period_ordered(self) -> EpisodeDetails:
        if self.period_start and self.period_end and self.period_end < self.period_start:
            raise ValueError("period_end is before period_start")
        return self


class ProcedureDetails(_Frozen):
    """What a procedure adds: a named workflow, when to use it, its ordered steps."""

    name: str = Field(min_length=1, max_length=200)
    trigger: str = ""
    steps: list[str] = Field(default_factory=list, max_length=100)
    success_count: int = Field(default=0, ge=0)
    failure_count: int = Field(default=0, ge=0)
    last_outcome_at: datetime | None = None


class Environment(_Frozen):
    """An isolated space of memories, usually one per project."""

    id: str
    name: str
    owner: str
    description: str = ""
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)


class Memory(_Frozen):
    """One memory in one of the three layers. ``content`` is the fact, the episode's summary, or
    the procedure's description."""

    id: str
    environment_id: str
    layer: Layer
    content: str
    category: str = "general"
    tags: list[str] = Field(default_factory=list)
    importance: Score = 0.5
    confidence: Score = 0.8
    source: Source = Source.MANUAL
    status: Status = Status.ACTIVE
    pinned: bool = False
    supersedes: str | None = None
    superseded_by: str | None = None
    merged_into: str | None = None
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None = None
    access_count: int = 0
    reinforcement_count: int = 0
    author: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None
    keyword_context: str = ""
    thread: str | None = None
    version: int = 1
    redactions: dict[str, int] = Field(
        default_factory=dict,
        description="Secrets the scrubber removed from this memory's text by the write that "
        "returned it (or made this version), as kind -> count; empty on plain reads.",
    )

    def keyword_text(self) -> str:
        """What the keyword index holds: the search text plus any keyword-only context."""
        text = self.search_text()
        return f"{text}\n{self.keyword_context}" if self.keyword_context else text

    def search_text(self) -> str:
        """The text that is embedded (and, with ``keyword_context``, keyword-indexed)."""
        return search_text(self.content, self.episode, self.procedure)


def search_text(
    content: str, episode: EpisodeDetails | None, procedure: ProcedureDetails | None
) -> str:
    """A memory's searchable text: its content with its procedure's or episode's details."""
    parts = [content]
    if procedure is not None:
        parts = [procedure.name, procedure.trigger, content, *procedure.steps]
    if episode is not None:
        parts.extend(episode.key_decisions)
    return "\n".join(p for p in parts if p)


class MemoryVersion(_Frozen):
    """An append-only record of one change: the memory's full state after it."""

    memory_id: str
    version: int
    action: Action
    at: datetime
    actor: str | None = None
    reason: str = ""
    snapshot: Memory


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewMemory(_Input):
    """What a caller supplies to create a memory."""

    layer: Layer = Layer.FACT
    content: Content
    category: Category = "general"
    tags: Tags = Field(default_factory=list)
    importance: Score = 0.5
    confidence: Score = 0.8
    source: Source = Source.MANUAL
    pinned: bool = False
    author: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None
    created_at: datetime | None = Field(
        default=None, description="When the memory was made; defaults to now (used by imports)."
    )
    keyword_context: str = Field(
        default="",
        max_length=MAX_CONTENT_CHARS,
        description="Extra text indexed for keyword search only, never embedded or shown: e.g. "
        "the neighbouring turns of the conversation a memory came from.",
    )
    thread: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The conversation or session the memory came from (a chat, an agent "
        "session). Search lifts a memory whose thread holds other strong matches.",
    )
    lifecycle: bool = Field(
        default=True,
        description="Write through dedup and contradiction (the default): a duplicate fact is "
        "merged, a contradicted one superseded, an unclear conflict queued. False stores the "
        "memory exactly as given.",
    )

    @model_validator(mode="after")
    def _layer_details(self) -> NewMemory:
        if self.layer is Layer.PROCEDURE and self.procedure is None:
            raise ValueError("a procedure needs 'procedure' details (at least a name)")
        if self.layer is not Layer.PROCEDURE and self.procedure is not None:
            raise ValueError(f"'procedure' details are only for procedures, not a {self.layer}")
        if self.layer is not Layer.EPISODE and self.episode is not None:
            raise ValueError(f"'episode' details are only for episodes, not a {self.layer}")
        return self


class MemoryPatch(_Input):
    """A partial update; fields left as None are unchanged."""

    content: Content | None = None
    category: Category | None = None
    tags: Tags | None = None
    importance: Score | None = None
    confidence: Score | None = None
    pinned: bool | None = None
    metadata: dict[str, Any] | None = None
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None

    def changes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.model_fields_set if getattr(self, k) is not None}


class MemoryFilter(_Input):
    """Which memories to list or search. Empty lists mean 'any'."""

    environment_ids: list[str] = Field(default_factory=list)
    layers: list[Layer] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list, description="memories carrying all of these")
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE])
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    min_importance: Score | None = None
    max_importance: Score | None = None
    ids: list[str] = Field(default_factory=list)
    threads: list[str] = Field(
        default_factory=list, description="memories from any of these conversations or sessions"
    )

    @model_validator(mode="after")
    def _ranges(self) -> MemoryFilter:
        if (
            self.min_importance is not None
            and self.max_importance is not None
            and self.min_importance > self.max_importance
        ):
            raise ValueError("min_importance is greater than max_importance")
        if self.created_after and self.created_before and self.created_after > self.created_before:
            raise ValueError("created_after is later than created_before")
        return self


class Page(_Frozen):
    items: list[Memory]
    total: int
    limit: int
    offset: int
