"""Search (``POST /api/v1/search``; the MCP tools ``recall``, ``search_episodes``,
``search_procedures``) and context assembly (``POST /api/v1/context/assemble`` and
``/preview``; ``get_context``, ``preview_context``)."""

from __future__ import annotations

from typing import Annotated, TypedDict

from pydantic import Field, StrictBool

from engram.limits import (
    JSON_NUMBER,
    MAX_CONTEXT_TOKENS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_RESULTS,
    MIN_CONTEXT_TOKENS,
    InputModel,
    Timestamp,
)
from engram.models import Layer, MemoryFilter, Status
from engram.requests.fields import EnvironmentRef, FilterValues
from engram.retrieval.models import SearchMode

Query = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_CHARS,
        description="What to look for; empty: the most important and recently used memories "
        "(a brief).",
    ),
]
"""A search or context query: empty is allowed (a brief)."""
SearchLimit = Annotated[int, Field(ge=1, le=MAX_SEARCH_RESULTS), JSON_NUMBER]
MaxTokens = Annotated[
    int,
    Field(ge=MIN_CONTEXT_TOKENS, le=MAX_CONTEXT_TOKENS, description="Token budget of the block."),
    JSON_NUMBER,
]
TierCap = Annotated[int, Field(ge=0, le=1000), JSON_NUMBER] | None
"""A cap on the items of one context tier (0-1000); none: as many as fit."""


class SearchOptions(TypedDict):
    """The keyword arguments of ``SearchService.search`` a :class:`SearchRequest` fills."""

    environment: str | None
    mode: SearchMode
    flt: MemoryFilter
    include_superseded: bool
    limit: int


class ContextOptions(TypedDict):
    """The keyword arguments of ``ContextService.assemble`` a :class:`ContextRequest` fills."""

    environment: str | None
    max_tokens: int
    max_facts: int | None
    max_messages: int | None
    max_episodes: int | None
    max_procedures: int | None
    mode: SearchMode


class SearchRequest(InputModel):
    """One search of one environment."""

    query: Query
    environment: EnvironmentRef | None = Field(default=None, description="Name or id")
    mode: SearchMode = SearchMode.HYBRID
    layers: list[Layer] = Field(default_factory=list, max_length=len(Layer))
    categories: FilterValues = Field(default_factory=list)
    tags: FilterValues = Field(default_factory=list, description="Memories carrying all")
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE], max_length=len(Status))
    created_after: Timestamp | None = Field(
        default=None, description="A range whose start is past its end matches nothing"
    )
    created_before: Timestamp | None = None
    include_superseded: StrictBool = False
    limit: SearchLimit = 10

    def options(self) -> SearchOptions:
        """``engram.search.search(request.query, actor, **request.options())``."""
        flt = MemoryFilter(
            layers=self.layers,
            categories=self.categories,
            tags=self.tags,
            statuses=self.statuses,
            created_after=self.created_after,
            created_before=self.created_before,
        )
        return SearchOptions(
            environment=self.environment,
            mode=self.mode,
            flt=flt,
            include_superseded=self.include_superseded,
            limit=self.limit,
        )


class ContextRequest(InputModel):
    """One context block for a query (empty: a start-of-session brief)."""

    query: Query = ""
    environment: EnvironmentRef | None = Field(default=None, description="Name or id")
    max_tokens: MaxTokens = 2000
    max_facts: TierCap = Field(default=None, description="a cap on facts; none: as many as fit")
    max_messages: TierCap = Field(default=None, description="a cap on conversation messages")
    max_episodes: TierCap = None
    max_procedures: TierCap = None
    mode: SearchMode = SearchMode.HYBRID

    def options(self) -> ContextOptions:
        """``engram.context.assemble(actor, request.query, **request.options())``."""
        return ContextOptions(
            environment=self.environment,
            max_tokens=self.max_tokens,
            max_facts=self.max_facts,
            max_messages=self.max_messages,
            max_episodes=self.max_episodes,
            max_procedures=self.max_procedures,
            mode=self.mode,
        )
