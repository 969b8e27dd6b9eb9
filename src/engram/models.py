"""The memory model: three layers (fact, episode, procedure) sharing one identity and history.

Value objects are immutable pydantic models; the service layer creates new states with
``model_copy(update=...)`` and the store persists them together with an append-only version.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, model_validator

from engram.limits import (
    JSON_NUMBER,
    MAX_AUTHOR_CHARS,
    MAX_CONTENT_CHARS,
    MAX_LIST_ITEMS,
    MAX_NAME_CHARS,
    MAX_STEPS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THREAD_CHARS,
    MAX_TRIGGER_CHARS,
    SPACE,
    SPACE_CLASS,
    InputModel,
    Metadata,
    StrictInt,
    Timestamp,
)

Score = Annotated[float, Field(ge=0.0, le=1.0)]
InputScore = Annotated[float, Field(ge=0.0, le=1.0), JSON_NUMBER]
"""A score a caller sends: a JSON number (not a string or a boolean)."""

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_CATEGORY_PATTERN = rf"^[{SPACE_CLASS}]*[A-Za-z][A-Za-z0-9_-]{{0,39}}[{SPACE_CLASS}]*$"
_CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_TAG_PATTERN = rf"^[{SPACE_CLASS}]*[^{SPACE_CLASS},][^,]*$"
_TAG_RE = re.compile(rf"^[^{SPACE_CLASS},][^,]*$")
_TEXT_PATTERN = rf"[^{SPACE_CLASS}]"


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
MESSAGE_CATEGORY = "message"
"""The category of a delivered message kept as a searchable episode (engram.extraction.turns);
the lifecycle never compacts these."""


def validate_category(value: str) -> str:
    typed = value.strip(SPACE)
    value = typed.lower()
    if not _CATEGORY_RE.match(value):
        raise ValueError(  # the value as typed: it is lowercased only once it is valid
            f"category {typed!r} must be 1-40 characters: a letter, then letters, "
            "digits, '_' or '-' (stored lowercase)"
        )
    return value


def validate_tags(value: list[str]) -> list[str]:
    out: list[str] = []
    for tag in value:
        tag = tag.strip(SPACE)
        if not _TAG_RE.match(tag) or len(tag) > MAX_TAG_CHARS:
            raise ValueError(f"tag {tag!r} must be 1-{MAX_TAG_CHARS} characters without commas")
        tag = tag.lower()
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags, got {len(out)}")
    return out


def validate_content(value: str) -> str:
    if len(value) > MAX_CONTENT_CHARS:
        raise ValueError(f"content is {len(value)} characters; the limit is {MAX_CONTENT_CHARS}")
    value = value.strip(SPACE)
    if not value:
        raise ValueError("content must not be empty")
    return value


ENV_NAME_PATTERN = rf"^[{SPACE_CLASS}]*[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}[{SPACE_CLASS}]*$"
"""An environment name as a caller may send it (trimmed and lowercased when stored)."""
ACCOUNT_NAME_PATTERN = rf"^[{SPACE_CLASS}]*[^{SPACE_CLASS}]+[{SPACE_CLASS}]*$"
"""A user or key name: no whitespace inside (trimmed when stored)."""


def validate_env_name(value: str) -> str:
    value = value.strip(SPACE).lower()
    if not _NAME_RE.match(value):
        raise ValueError(
            f"environment name {value!r} must be 1-64 characters: lowercase letters, digits, "
            "'_', '.' or '-', starting with a letter or digit"
        )
    if value.startswith("env_"):
        raise ValueError(f"environment name {value!r} must not start with 'env_' (ids do)")
    return value


Content = Annotated[
    str,
    Field(
        json_schema_extra={"maxLength": MAX_CONTENT_CHARS, "pattern": _TEXT_PATTERN},
        description=f"Text with at least one non-space character, at most {MAX_CONTENT_CHARS} "
        "characters (surrounding whitespace is trimmed).",
    ),
    AfterValidator(validate_content),
]
# The patterns go to the schema only: the validators state what is wrong more clearly.
Category = Annotated[
    str, Field(json_schema_extra={"pattern": _CATEGORY_PATTERN}), AfterValidator(validate_category)
]
Tag = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TAG_CHARS, json_schema_extra={"pattern": _TAG_PATTERN}),
]
Tags = Annotated[
    list[Tag],
    Field(max_length=MAX_TAGS, description=f"At most {MAX_TAGS} tags, lowercased, no commas"),
    AfterValidator(validate_tags),
]
Item = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
Items = Annotated[list[Item], Field(max_length=MAX_LIST_ITEMS)]
ProcedureName = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Trigger = Annotated[str, Field(max_length=MAX_TRIGGER_CHARS)]
Steps = Annotated[list[Trigger], Field(max_length=MAX_STEPS)]
Thread = Annotated[str, Field(min_length=1, max_length=MAX_THREAD_CHARS)]
"""The conversation or session a memory came from."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EpisodeDetails(_Frozen):
    """What an episode adds to a memory: the session it summarises."""

    period_start: Timestamp | None = None
    period_end: Timestamp | None = Field(default=None, description="not before period_start")
    participants: Items = Field(default_factory=list)
    conversation_id: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    agent: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    session_id: str | None = Field(default=None, max_length=MAX_NAME_CHARS)
    key_decisions: Items = Field(default_factory=list)
    open_questions: Items = Field(default_factory=list)

    @model_validator(mode="after")
    def _period_ordered(self) -> EpisodeDetails:
        if self.period_start and self.period_end and self.period_end < self.period_start:
            raise ValueError("period_end is before period_start")
        return self


class ProcedureDetails(_Frozen):
    """What a procedure adds: a named workflow, when to use it, its ordered steps."""

    name: ProcedureName
    trigger: Trigger = ""
    steps: Steps = Field(default_factory=list)
    success_count: StrictInt = Field(default=0, ge=0)
    failure_count: StrictInt = Field(default=0, ge=0)
    last_outcome_at: Timestamp | None = None


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
    recorded_at: datetime | None = Field(
        default=None,
        description="When Engram first stored it; `created_at` is when it was said or true "
        "(they differ for delivered or imported history). Null for memories stored before "
        "Engram kept it.",
    )
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


class _Input(InputModel):
    """What a caller supplies: unknown fields refused, text checked (see InputModel)."""


class NewMemory(_Input):
    """What a caller supplies to create a memory."""

    layer: Layer = Layer.FACT
    content: Content
    category: Category = "general"
    tags: Tags = Field(default_factory=list)
    importance: InputScore = 0.5
    confidence: InputScore = 0.8
    source: Source = Source.MANUAL
    pinned: StrictBool = False
    author: str | None = Field(default=None, max_length=MAX_AUTHOR_CHARS)
    metadata: Metadata = Field(default_factory=dict)
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None
    created_at: Timestamp | None = Field(
        default=None, description="When the memory was made; defaults to now (used by imports)."
    )
    keyword_context: str = Field(
        default="",
        max_length=MAX_CONTENT_CHARS,
        description="Extra text indexed for keyword search only, never embedded or shown: e.g. "
        "the neighbouring turns of the conversation a memory came from.",
    )
    thread: Thread | None = Field(
        default=None,
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
    importance: InputScore | None = None
    confidence: InputScore | None = None
    pinned: StrictBool | None = None
    metadata: Metadata | None = None
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
    # A range whose start is past its end is not an error: it matches nothing.


class Page(_Frozen):
    items: list[Memory]
    total: int
    limit: int
    offset: int
