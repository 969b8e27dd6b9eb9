"""/api/v1/search: keyword, semantic or hybrid search with score breakdowns. The body is
:class:`engram.requests.retrieval.SearchRequest`, the model the MCP search tools validate into."""

from __future__ import annotations

from fastapi import APIRouter

from engram.api.deps import ActorDep, EngramDep
from engram.requests.retrieval import SearchRequest
from engram.retrieval.models import SearchResult

router = APIRouter(tags=["search"])


@router.post("", summary="Search one environment; each result carries its score breakdown")
def search(body: SearchRequest, engram: EngramDep, actor: ActorDep) -> SearchResult:
    """An empty query is a brief: the most important and recently used memories."""
    return engram.search.search(body.query, actor, **body.options())
