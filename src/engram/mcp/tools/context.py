"""Reading memory for a task: hybrid search and context assembly. The arguments are validated
into the request models REST takes as bodies (:mod:`engram.requests.retrieval`), so both edges
accept the same values."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.mcp.binding import Binding
from engram.mcp.tools import _compact
from engram.mcp.tools._common import READ, Environment, tool
from engram.models import Layer
from engram.requests.fields import FilterValue, FilterValues
from engram.requests.retrieval import (
    ContextRequest,
    MaxTokens,
    Query,
    SearchLimit,
    SearchRequest,
)
from engram.retrieval.models import AssembledContext, SearchMode

TaskQuery = Annotated[
    Query, Field(description="What the task is about; empty for a general brief.")
]
Details = Annotated[
    bool, Field(description="Also return every item in full with its score breakdown.")
]


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Recall memories", READ)
    def recall(
        query: Annotated[
            Query,
            Field(
                description="Natural language: what you need to know (empty: the most "
                "important and recently used memories).",
            ),
        ],
        layer: Annotated[Layer | None, Field(description="fact, episode or procedure.")] = None,
        category: FilterValue | None = None,
        tags: Annotated[FilterValues | None, Field(description="Memories carrying all.")] = None,
        limit: SearchLimit = 10,
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
        request = SearchRequest(
            query=query,
            environment=b.env(environment),
            mode=mode,
            layers=[layer] if layer else [],
            categories=[category] if category else [],
            tags=tags or [],
            include_superseded=include_superseded,
            limit=limit,
        )
        found = b.engram.search.search(request.query, b.current_actor(), **request.options())
        return _compact.recalled(query, found.items, details)

    def assemble(
        query: str, max_tokens: int, environment: str | None, *, preview: bool
    ) -> AssembledContext:
        request = ContextRequest(query=query, max_tokens=max_tokens, environment=b.env(environment))
        return b.engram.context.assemble(
            b.current_actor(), query, **request.options(), preview=preview
        )

    @tool(server, "Get context", READ)
    def get_context(
        query: TaskQuery = "",
        max_tokens: MaxTokens = 2000,
        details: Details = False,
        environment: Environment = None,
    ) -> _compact.Context:
        """The Soul plus the relevant facts, conversation messages, episodes and procedures,
        packed into one prompt block that fills max_tokens while relevant evidence remains;
        every line starts with the date it was said or recorded, and a message whose fact was
        later superseded ends with '[superseded on DAY by: the current fact]'. Returns the
        block, one compact line per item and the answer's own token count (details=true adds
        tiers, scores and timings). Call it at the start of a session or a new task."""
        return _compact.context(assemble(query, max_tokens, environment, preview=False), details)

    @tool(server, "Preview context", READ)
    def preview_context(
        query: TaskQuery = "", max_tokens: MaxTokens = 2000, environment: Environment = None
    ) -> AssembledContext:
        """What get_context would return, with per-tier budgets and scores, without counting
        it as a use of the memories. For inspecting or debugging what a model would see."""
        return assemble(query, max_tokens, environment, preview=True)
