"""Episodes (what happened in a session) and procedures (how to do something)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.limits import MAX_QUERY_CHARS
from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, WRITE, Environment, MemoryId, tool
from engram.models import (
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    NewMemory,
    ProcedureDetails,
    Source,
)
from engram.retrieval.models import SearchResult

Query = Annotated[str, Field(max_length=MAX_QUERY_CHARS, description="What to look for.")]
Limit = Annotated[int, Field(ge=1, le=50)]
Tags = Annotated[list[str] | None, Field(description="Short lowercase labels.")]
Importance = Annotated[float, Field(ge=0, le=1)]


def register(server: MCPServer[Any], b: Binding) -> None:
    def search(query: str, layer: Layer, limit: int, environment: str | None) -> SearchResult:
        return b.engram.search.search(
            query,
            b.current_actor(),
            environment=b.env(environment),
            flt=MemoryFilter(layers=[layer]),
            limit=limit,
        )

    @tool(server, "Record an episode", WRITE)
    def create_episode(
        summary: Annotated[str, Field(description="What happened, in a few sentences.")],
        key_decisions: list[str] | None = None,
        open_questions: list[str] | None = None,
        participants: list[str] | None = None,
        period_start: datetime | None = None,
        period_end: datetime | None = None,
        session_id: str | None = None,
        agent: Annotated[
            str | None, Field(description="The tool writing it, e.g. 'claude-code'.")
        ] = None,
        tags: Tags = None,
        importance: Importance = 0.5,
        environment: Environment = None,
    ) -> Memory:
        """Save a summary of a work session at its end (or at a milestone): what was done, the
        decisions taken and what is still open, so a later session can pick up from here."""
        new = NewMemory(
            layer=Layer.EPISODE,
            content=summary,
            tags=tags or [],
            importance=importance,
            source=Source.AGENT,
            thread=session_id or None,
            episode=EpisodeDetails(
                period_start=period_start,
                period_end=period_end,
                participants=participants or [],
                session_id=session_id,
                agent=agent,
                key_decisions=key_decisions or [],
                open_questions=open_questions or [],
            ),
        )
        return b.engram.memories.add(new, b.current_actor(), b.env(environment))

    @tool(server, "Search episodes", READ)
    def search_episodes(
        query: Query, limit: Limit = 5, environment: Environment = None
    ) -> SearchResult:
        """Find past sessions about a topic: what was done before, when, and what was decided."""
        return search(query, Layer.EPISODE, limit, environment)

    @tool(server, "Save a procedure", WRITE)
    def create_procedure(
        name: Annotated[str, Field(min_length=1, max_length=200, description="Short name.")],
        description: Annotated[str, Field(description="What the procedure achieves.")],
        steps: Annotated[list[str], Field(description="Ordered, concrete steps.")],
        trigger: Annotated[str, Field(description="When to use it.")] = "",
        tags: Tags = None,
        importance: Importance = 0.5,
        environment: Environment = None,
    ) -> Memory:
        """Save a workflow that worked (build, release, debug recipe...) as ordered steps, so it
        can be reused instead of rediscovered."""
        new = NewMemory(
            layer=Layer.PROCEDURE,
            content=description,
            tags=tags or [],
            importance=importance,
            source=Source.AGENT,
            procedure=ProcedureDetails(name=name, trigger=trigger, steps=steps),
        )
        return b.engram.memories.add(new, b.current_actor(), b.env(environment))

    @tool(server, "Record a procedure outcome", WRITE)
    def record_procedure_outcome(
        memory_id: MemoryId,
        success: Annotated[bool, Field(description="Whether following it worked this time.")],
        note: str = "",
    ) -> Memory:
        """After following a procedure, report whether it worked; the success and failure
        counts rank procedures and show which ones to trust."""
        return b.engram.memories.record_outcome(
            memory_id, b.current_actor(), success=success, note=note
        )

    @tool(server, "Search procedures", READ)
    def search_procedures(
        query: Query, limit: Limit = 5, environment: Environment = None
    ) -> SearchResult:
        """Find a known way to do a task (how we build, deploy, test...) before working it out
        from scratch."""
        return search(query, Layer.PROCEDURE, limit, environment)
