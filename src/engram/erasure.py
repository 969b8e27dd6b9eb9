"""What a deletion for good reports (:class:`Erased`): plain data shared by the service, the
edges and the SDK."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

KEPT = [
    "audit entries (ids, actions and counts; no content)",
    "backups and exports made before",
]


class Erased(BaseModel):
    """What a deletion removed for good, and what it left."""

    model_config = ConfigDict(frozen=True)

    removed: dict[str, int] = Field(description="rows removed, by kind")
    conversations: list[str] = Field(default_factory=list, description="their ids")
    memories: list[str] = Field(default_factory=list, description="purged memory ids")
    environments: list[str] = Field(default_factory=list, description="deleted environment ids")
    user_id: str | None = None
    kept: list[str] = Field(default_factory=lambda: list(KEPT), description="what remains")
