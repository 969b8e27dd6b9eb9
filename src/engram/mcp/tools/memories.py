"""Facts and any memory by id: remember, read, edit, delete, restore, history, recent."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.lifecycle import WriteOutcome
from engram.limits import MAX_PAGE
from engram.mcp.binding import Binding
from engram.mcp.tools._common import DESTRUCTIVE, READ, UPDATE, WRITE, Environment, MemoryId, tool
from engram.models import (
    Category,
    Content,
    InputScore,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryVersion,
    NewMemory,
    Page,
    Source,
    Tags,
    Thread,
)
from engram.requests.fields import FilterValue, Reason, Version

Importance = Annotated[InputScore, Field(description="0.9+ critical, 0.5 normal, below 0.5 minor.")]


class History(BaseModel):
    memory_id: str
    versions: list[MemoryVersion] = Field(description="Every version, oldest first.")


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Remember a fact", WRITE)
    def remember(
        content: Annotated[Content, Field(description="One atomic, self-contained fact.")],
        category: Annotated[
            Category,
            Field(description="preference, fact, decision, project, general, or your own."),
        ] = "general",
        tags: Annotated[Tags | None, Field(description="Short lowercase labels.")] = None,
        importance: Importance = 0.5,
        confidence: InputScore = 0.8,
        session_id: Annotated[
            Thread | None,
            Field(
                description="This chat or agent session's id, if known: search groups the "
                "memories of one session (their thread).",
            ),
        ] = None,
        lifecycle: Annotated[
            bool,
            Field(
                description="false stores the fact exactly as given, with no dedup or "
                "contradiction check (use only when the user asks for it)."
            ),
        ] = True,
        environment: Environment = None,
    ) -> WriteOutcome:
        """Store a durable fact about the user, the project or a decision, for future sessions.

        Write one fact per call, in a full sentence that makes sense without this conversation.
        Duplicates are merged into the existing fact (action 'merged'); a fact that changes an
        older one supersedes it ('superseded'), unless it was said before it ('outdated': kept
        as history); an unclear conflict is stored and queued for review ('queued'). Nothing
        is ever lost: every change can be restored."""
        new = NewMemory(
            content=content,
            category=category,
            tags=tags or [],
            importance=importance,
            confidence=confidence,
            source=Source.AGENT,
            thread=session_id or None,
            lifecycle=lifecycle,
        )
        return b.engram.lifecycle.remember(new, b.current_actor(), b.env(environment))

    @tool(server, "Get a memory", READ)
    def get_memory(memory_id: MemoryId) -> Memory:
        """Read one memory (fact, episode or procedure) by id, whatever its status."""
        return b.engram.memories.get(memory_id, b.current_actor())

    @tool(server, "Update a memory", UPDATE)
    def update_memory(
        memory_id: MemoryId,
        content: Content | None = None,
        category: Category | None = None,
        tags: Tags | None = None,
        importance: InputScore | None = None,
        confidence: InputScore | None = None,
        pinned: bool | None = None,
        reason: Annotated[Reason, Field(description="Why; kept in the history.")] = "",
    ) -> Memory:
        """Correct or refine a memory in place; only the fields given change. The previous
        state stays in the history (memory_history) and can be restored. A call that changes
        nothing (no fields, or the values it already has) writes no version."""
        patch = MemoryPatch(
            content=content,
            category=category,
            tags=tags,
            importance=importance,
            confidence=confidence,
            pinned=pinned,
        )
        return b.engram.memories.update(memory_id, patch, b.current_actor(), reason)

    @tool(server, "Delete a memory", DESTRUCTIVE)
    def delete_memory(memory_id: MemoryId, reason: Reason = "") -> Memory:
        """Soft-delete a memory that is wrong or unwanted: it leaves search and context but
        restore_memory brings it back. Prefer update_memory or feedback for small corrections."""
        actor = b.current_actor()
        return b.engram.memories.delete(memory_id, actor, reason)

    @tool(server, "Restore a memory", UPDATE)
    def restore_memory(
        memory_id: MemoryId,
        version: Annotated[
            Version | None,
            Field(description="Bring back this version; omit to undelete/unmerge."),
        ] = None,
    ) -> Memory:
        """Undo a delete, merge or supersede, or return a memory to an earlier version (see
        memory_history); the restore is itself a new version."""
        return b.engram.memories.restore(memory_id, b.current_actor(), version)

    @tool(server, "Memory history", READ)
    def memory_history(memory_id: MemoryId) -> History:
        """Every version of a memory, oldest first: what changed, who changed it, and why."""
        versions = b.engram.memories.history(memory_id, b.current_actor())
        return History(memory_id=memory_id, versions=versions)

    @tool(server, "List recent memories", READ)
    def list_recent(
        layer: Annotated[Layer | None, Field(description="fact, episode or procedure.")] = None,
        category: FilterValue | None = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE)] = 20,
        environment: Environment = None,
    ) -> Page:
        """The most recently changed active memories, newest first (no query needed)."""
        flt = MemoryFilter(
            layers=[layer] if layer else [], categories=[category] if category else []
        )
        return b.engram.memories.list_memories(
            b.current_actor(), flt, environment=b.env(environment), limit=limit
        )
