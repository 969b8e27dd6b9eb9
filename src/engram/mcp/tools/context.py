"""Reading memory for a task: hybrid search and context assembly."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.limits import MAX_QUERY_CHARS, MAX_SEARCH_RESULTS
from engram.mcp.binding import Binding
from engram.mcp.tools import _compact
from engram.mcp.tools._common import READ, Environment, tool
from engram.models import Layer, MemoryFilter
from engram.retrieval.models import AssembledContext, SearchMode

MaxTokens = Annotated[int, Field(ge=64, le=200_000, description="Token budget of the block.")]
Query = Annotated[
    str,
    Field(
        max_length=MAX_QUERY_CHARS,
        description="What the task is about; empty for a general brief.",
    ),
]
Details = Annotated[
    bool, Field(description="Also return every item in full with its score breakdown.")
]


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Recall memories", READ)
    def recall(
        query: Annotated[
            str,
            Field(
                max_length=MAX_QUERY_CHARS,
                description="Natural language: what you need to know (empty: the most "
                "important and recently used memories).",
            ),
        ],
        layer: Annotated[Layer | None, Field(description="fact, episode or procedure.")] = None,
        category: str | None = None,
        tags: Annotated[list[str] | None, Field(description="Memories carrying all.")] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_RESULTS)] = 10,
        mode: SearchMode = SearchMode.HYBRID,
        include_superseded: bool = False,
        details: Details = False,
        environment: Environment = None,
    ) -> _compact.Recalled:
        """Search stored memories and delivered conversation messages (keyword + semantic)
        before answering anything that depends on the user's preferences, past decisions,
        what was said, or project history. Returns compact hits (id, one line starting with
        its date, score, source message ids) and the answer's own token count; details=true
        adds each memory in full with its score breakdown. Only results above the relevance
        floor are returned: an empty list means nothing relevant is stored."""
        flt = MemoryFilter(
            layers=[layer] if layer else [],
            categories=[category] if category else [],
            tags=tags or [],
        )
        found = b.engram.search.search(
            query,
            b.current_actor(),
            environment=b.env(environment),
            mode=mode,
            flt=flt,
            include_superseded=include_superseded,
            limit=limit,
        )
        return _compact.recalled(query, found.items, details)

    @tool(server, "Get context", READ)
    def get_context(
        query: Query = "",
        max_tokens: MaxTokens = 2000,
        details: Details = False,
        environment: Environment = None,
    ) -> _compact.Context:
        """The Soul plus the relevant facts, conversation messages, episodes and procedures,
        packed into one prompt block that fills max_tokens while relevant evidence remains;
        every line starts with the date it was said or recorded. Returns the block, one
        compact line per item and the answer's own token count (details=true adds tiers,
        scores and timings). Call it at the start of a session or a new task."""
        ctx = b.engram.context.assemble(
            b.current_actor(), query, environment=b.env(environment), max_tokens=max_tokens
        )
        return _compact.context(ctx, details)

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
