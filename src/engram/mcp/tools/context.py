"""Reading memory for a task: hybrid search and context assembly."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, Environment, tool
from engram.models import Layer, MemoryFilter
from engram.retrieval.models import AssembledContext, SearchMode, SearchResult

MaxTokens = Annotated[int, Field(ge=64, le=200_000, description="Token budget of the block.")]
Query = Annotated[str, Field(description="What the task is about; empty for a general brief.")]


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Recall memories", READ)
    def recall(
        query: Annotated[str, Field(description="Natural language: what you need to know.")],
        layer: Annotated[Layer | None, Field(description="fact, episode or procedure.")] = None,
        category: str | None = None,
        tags: Annotated[list[str] | None, Field(description="Memories carrying all.")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 10,
        mode: SearchMode = SearchMode.HYBRID,
        include_superseded: bool = False,
        environment: Environment = None,
    ) -> SearchResult:
        """Search stored memories (keyword + semantic) before answering anything that depends
        on the user's preferences, past decisions or project history. Each result has its
        score and a breakdown (relevance, importance, confidence, recency, frequency)."""
        flt = MemoryFilter(
            layers=[layer] if layer else [],
            categories=[category] if category else [],
            tags=tags or [],
        )
        return b.engram.search.search(
            b.current_actor(),
            query,
            environment=b.env(environment),
            mode=mode,
            flt=flt,
            include_superseded=include_superseded,
            limit=limit,
        )

    @tool(server, "Get context", READ)
    def get_context(
        query: Query = "", max_tokens: MaxTokens = 2000, environment: Environment = None
    ) -> AssembledContext:
        """The Soul plus the most relevant facts, episodes and procedures, packed into one
        prompt block within max_tokens. Call it at the start of a session or a new task."""
        return b.engram.context.assemble(
            b.current_actor(), query, environment=b.env(environment), max_tokens=max_tokens
        )

    @tool(server, "Preview context", READ)
    def preview_context(
        query: Query = "", max_tokens: MaxTokens = 2000, environment: Environment = None
    ) -> AssembledContext:
        """What get_context would return, with per-tier budgets and scores, without counting
        it as a use of the memories. For inspecting or debugging what a model would see."""
        return b.engram.context.assemble(
            b.current_actor(),
            query,
            environment=b.env(environment),
            max_tokens=max_tokens,
            preview=True,
        )
