"""Request and response bodies of the REST API that are not domain models themselves.

Memories, versions, environments, users, keys and audit entries travel as the same pydantic
models the service uses (``engram.models``, ``engram.accounts``), so the SDK shares them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engram.accounts import Role, Scope
from engram.models import (
    ORDERS,
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    ProcedureDetails,
    Score,
    Status,
)
from engram.service.memories import MAX_BULK

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


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- memories ----------------------------------------------------------------------------------
class NewFact(NewMemory):
    layer: Literal[Layer.FACT] = Layer.FACT


class NewEpisode(NewMemory):
    layer: Literal[Layer.EPISODE] = Layer.EPISODE


class NewProcedure(NewMemory):
    layer: Literal[Layer.PROCEDURE] = Layer.PROCEDURE
    procedure: ProcedureDetails


class MemoryQuery(_Body):
    """Filters of a memory listing (query parameters)."""

    environment: str | None = Field(default=None, description="name or id; default: yours")
    category: list[str] = Field(default_factory=list)
    tag: list[str] = Field(default_factory=list, description="memories carrying all of these")
    thread: list[str] = Field(
        default_factory=list, description="memories from any of these conversations or sessions"
    )
    status: list[Status] = Field(default_factory=lambda: [Status.ACTIVE])
    created_after: datetime | None = None
    created_before: datetime | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    min_importance: Score | None = None
    max_importance: Score | None = None
    limit: int = Field(default=50, ge=1, le=1000)
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
    ids: list[str] = Field(min_length=1, max_length=MAX_BULK)
    reason: str = Field(default="", max_length=1000)


class PatchItem(_Body):
    id: str
    patch: MemoryPatch


class BulkPatch(_Body):
    items: list[PatchItem] = Field(min_length=1, max_length=MAX_BULK)
    reason: str = Field(default="", max_length=1000)


class RestoreBody(_Body):
    version: int | None = Field(default=None, ge=1, description="default: the last active one")
    reason: str = Field(default="", max_length=1000)


class OutcomeBody(_Body):
    note: str = Field(default="", max_length=1000)


class Purged(BaseModel):
    purged: int


# -- environments ------------------------------------------------------------------------------
class EnvironmentIn(_Body):
    name: str = Field(min_length=1, max_length=64)
    description: str = Field(default="", max_length=2000)


class MemberIn(_Body):
    role: Role = Role.READER


# -- users and keys ----------------------------------------------------------------------------
class UserIn(_Body):
    name: str = Field(min_length=1, max_length=64)
    password: str | None = Field(default=None, min_length=8, max_length=1024)
    is_admin: bool = False


class PasswordIn(_Body):
    password: str = Field(min_length=8, max_length=1024)


class KeyIn(_Body):
    name: str = Field(default="default", min_length=1, max_length=64)
    scopes: list[Scope] = Field(default_factory=lambda: [Scope.READ, Scope.WRITE], min_length=1)
    user_id: str | None = Field(default=None, description="admins only: a key for another user")


class Health(BaseModel):
    status: str
