"""/api/v1/search: keyword, semantic or hybrid search with score breakdowns."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import Field, StrictBool

from engram.api.deps import ActorDep, EngramDep
from engram.api.schemas import FilterValues
from engram.limits import MAX_QUERY_CHARS, MAX_SEARCH_RESULTS, InputModel, StrictInt, Timestamp
from engram.models import Layer, MemoryFilter, Status
from engram.retrieval.models import SearchMode, SearchResult

router = APIRouter(tags=["search"])


class SearchIn(InputModel):
    query: str = Field(
        max_length=MAX_QUERY_CHARS,
        description="Empty: the most important and recently used memories (a brief)",
    )
    environment: str | None = Field(default=None, max_length=200)
    mode: SearchMode = SearchMode.HYBRID
    layers: list[Layer] = Field(default_factory=list, max_length=len(Layer))
    categories: FilterValues = Field(default_factory=list)
    tags: FilterValues = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE], max_length=len(Status))
    created_after: Timestamp | None = Field(
        default=None, description="A range whose start is past its end matches nothing"
    )
    created_before: Timestamp | None = None
    include_superseded: StrictBool = False
    limit: StrictInt = Field(default=10, ge=1, le=MAX_SEARCH_RESULTS)


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
        body.query,
        actor,
        environment=body.environment,
        mode=body.mode,
        flt=flt,
        include_superseded=body.include_superseded,
        limit=body.limit,
    )
