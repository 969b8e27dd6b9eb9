"""Request and response bodies of the REST API that are not domain models themselves.

Memories, versions, environments, users, keys and audit entries travel as the same pydantic
models the service uses (``engram.models``, ``engram.accounts``), so the SDK shares them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StrictBool

from engram.accounts import Role, Scope
from engram.limits import MAX_BULK, MAX_PAGE, InputModel, Timestamp
from engram.models import (
    ACCOUNT_NAME_PATTERN,
    ENV_NAME_PATTERN,
    ORDERS,
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    ProcedureDetails,
    Score,
    Status,
)
from engram.requests.fields import EnvironmentRef, FilterValues, Reason

Order = Literal[
    "-updated_at",
    "updated_at",
    "-created_at",
    "created_at",
    "-importance",
    "importance",
    "-access_count",
]
assert set(Order.__args__) == set(ORDERS)  # type: ignore[attr-defined]


class _Body(InputModel):
    """A request body: unknown fields refused, text checked (see InputModel)."""


Id = Annotated[str, Field(min_length=1, max_length=64)]


# -- memories ----------------------------------------------------------------------------------
# Each layer's body names only the details that layer takes, so the schema says what is refused.
class NewFact(NewMemory):
    layer: Literal[Layer.FACT] = Layer.FACT
    episode: None = None
    procedure: None = None


class NewEpisode(NewMemory):
    layer: Literal[Layer.EPISODE] = Layer.EPISODE
    procedure: None = None


class NewProcedure(NewMemory):
    layer: Literal[Layer.PROCEDURE] = Layer.PROCEDURE
    episode: None = None
    procedure: ProcedureDetails


class LayerEpisode(NewEpisode):
    layer: Literal[Layer.EPISODE]


class LayerProcedure(NewProcedure):
    layer: Literal[Layer.PROCEDURE]


AnyNewMemory = NewFact | LayerEpisode | LayerProcedure
"""A memory of any layer: a fact unless ``layer`` says otherwise, each layer with only its own
details (what ``/memories/remember`` takes)."""


class MemoryQuery(_Body):
    """Filters of a memory listing (query parameters)."""

    environment: EnvironmentRef | None = Field(
        default=None, description="name or id; default: yours"
    )
    category: FilterValues = Field(default_factory=list)
    tag: FilterValues = Field(default_factory=list, description="memories carrying all of these")
    thread: FilterValues = Field(
        default_factory=list,
        description="memories from any of these conversations (your id for one, or its cnv_ id) "
        "or sessions",
    )
    status: list[Status] = Field(default_factory=lambda: [Status.ACTIVE], max_length=len(Status))
    created_after: Timestamp | None = Field(
        default=None, description="A range whose start is past its end matches nothing"
    )
    created_before: Timestamp | None = None
    updated_after: Timestamp | None = None
    updated_before: Timestamp | None = None
    min_importance: Score | None = None
    max_importance: Score | None = None
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    offset: int = Field(default=0, ge=0, le=1_000_000_000)
    order: Order = "-updated_at"

    def to_filter(self, layer: Layer) -> MemoryFilter:
        return MemoryFilter(
            layers=[layer],
            categories=self.category,
            tags=self.tag,
            threads=self.thread,
            statuses=self.status,
            created_after=self.created_after,
            created_before=self.created_before,
            updated_after=self.updated_after,
            updated_before=self.updated_before,
            min_importance=self.min_importance,
            max_importance=self.max_importance,
        )


class IdsBody(_Body):
    ids: list[Id] = Field(min_length=1, max_length=MAX_BULK)
    reason: Reason = ""


class PatchItem(_Body):
    id: Id
    patch: MemoryPatch


class BulkPatch(_Body):
    items: list[PatchItem] = Field(min_length=1, max_length=MAX_BULK)
    reason: Reason = ""


class Purged(BaseModel):
    purged: int


# -- environments ------------------------------------------------------------------------------
class EnvironmentIn(_Body):
    name: str = Field(min_length=1, max_length=64, json_schema_extra={"pattern": ENV_NAME_PATTERN})
    description: str = Field(default="", max_length=2000)


class MemberIn(_Body):
    role: Role = Role.READER


# -- users and keys ----------------------------------------------------------------------------
class UserIn(_Body):
    name: str = Field(
        min_length=1, max_length=64, json_schema_extra={"pattern": ACCOUNT_NAME_PATTERN}
    )
    password: str | None = Field(default=None, min_length=8, max_length=1024)
    is_admin: StrictBool = False


class PasswordIn(_Body):
    password: str = Field(min_length=8, max_length=1024)


class KeyIn(_Body):
    name: str = Field(
        default="default",
        min_length=1,
        max_length=64,
        json_schema_extra={"pattern": ACCOUNT_NAME_PATTERN},
    )
    scopes: list[Scope] = Field(
        default_factory=lambda: [Scope.READ, Scope.WRITE], min_length=1, max_length=len(Scope)
    )
    user_id: Id | None = Field(default=None, description="admins only: a key for another user")


class Health(BaseModel):
    status: str
    pid: int | None = Field(
        default=None, description="The server process that answered (one of its workers)"
    )
