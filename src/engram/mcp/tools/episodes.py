"""Episodes (what happened in a session) and procedures (how to do something). Each tool's
parameters are typed by the fields of the models REST takes (:class:`engram.models.NewMemory`
with its episode or procedure details; :mod:`engram.requests`), so both edges accept the same
values."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.limits import Timestamp
from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, WRITE, Environment, MemoryId, tool
from engram.models import (
    Content,
    EpisodeDetails,
    InputScore,
    Item,
    Items,
    Layer,
    Memory,
    NewMemory,
    ProcedureDetails,
    ProcedureName,
    Source,
    Steps,
    Tags,
    Thread,
    Trigger,
)
from engram.requests.fields import Reason
from engram.requests.retrieval import Query, SearchLimit, SearchRequest
from engram.retrieval.models import SearchResult

TopicQuery = Annotated[Query, Field(description="What to look for.")]
AgentTags = Annotated[Tags | None, Field(description="Short lowercase labels.")]


def register(server: MCPServer[Any], b: Binding) -> None:
    def search(query: str, layer: Layer, limit: int, environment: str | None) -> SearchResult:
        request = SearchRequest(
            query=query, layers=[layer], limit=limit, environment=b.env(environment)
        )
        return b.engram.search.search(request.query, b.current_actor(), **request.options())

    @tool(server, "Record an episode", WRITE)
    def create_episode(
        summary: Annotated[Content, Field(description="What happened, in a few sentences.")],
        key_decisions: Items | None = None,
        open_questions: Items | None = None,
        participants: Items | None = None,
        period_start: Timestamp | None = None,
        period_end: Timestamp | None = None,
        session_id: Thread | None = None,
        agent: Annotated[
            Item | None, Field(description="The tool writing it, e.g. 'claude-code'.")
        ] = None,
        tags: AgentTags = None,
        importance: InputScore = 0.5,
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
        query: TopicQuery, limit: SearchLimit = 5, environment: Environment = None
    ) -> SearchResult:
        """Find past sessions about a topic: what was done before, when, and what was decided."""
        return search(query, Layer.EPISODE, limit, environment)

    @tool(server, "Save a procedure", WRITE)
    def create_procedure(
        name: Annotated[ProcedureName, Field(description="Short name.")],
        description: Annotated[Content, Field(description="What the procedure achieves.")],
        steps: Annotated[Steps, Field(description="Ordered, concrete steps.")],
        trigger: Annotated[Trigger, Field(description="When to use it.")] = "",
        tags: AgentTags = None,
        importance: InputScore = 0.5,
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
        note: Reason = "",
    ) -> Memory:
        """After following a procedure, report whether it worked; the success and failure
        counts rank procedures and show which ones to trust."""
        return b.engram.memories.record_outcome(
            memory_id, b.current_actor(), success=success, note=note
        )

    @tool(server, "Search procedures", READ)
    def search_procedures(
        query: TopicQuery, limit: SearchLimit = 5, environment: Environment = None
    ) -> SearchResult:
        """Find a known way to do a task (how we build, deploy, test...) before working it out
        from scratch."""
        return search(query, Layer.PROCEDURE, limit, environment)
