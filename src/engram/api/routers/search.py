"""/api/v1/search: keyword, semantic or hybrid search with score breakdowns."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from engram.api.deps import ActorDep, EngramDep
from engram.models import Layer, MemoryFilter, Status
from engram.retrieval.models import SearchMode, SearchResult

router = APIRouter(tags=["search"])


class SearchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000)
    environment: str | None = None
    mode: SearchMode = SearchMode.HYBRID
    layers: list[Layer] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list, max_length=50)
    tags: list[str] = Field(default_factory=list, max_length=50)
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE])
    created_after: datetime | None = None
    created_before: datetime | None = None
    include_superseded: bool = False
    limit: int = Field(default=10, ge=1, le=100)


@router.post("", summary="Search one environment; each result carries its score breakdown")
def search(body: SearchIn, engram: EngramDep, actor: ActorDep) -> SearchResult:
    flt = MemoryFilter(
        layers=body.layers,
        categories=body.categories,
        tags=body.tags,
        statuses=body.statuses,
        created_after=body.created_after,
        created_before=body.created_before,
    )
    return engram.search.search(
        actor,
        body.query,
        environment=body.environment,
        mode=body.mode,
        flt=flt,
        include_superseded=body.include_superseded,
        limit=body.limit,
    )
