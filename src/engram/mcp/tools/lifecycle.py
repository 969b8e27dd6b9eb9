"""Keeping memory accurate: feedback on a memory, and a maintenance sweep."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import Field

from engram.lifecycle import MaintenanceReport
from engram.lifecycle.feedback import FeedbackKind, FeedbackOutcome
from engram.mcp.binding import Binding
from engram.mcp.tools._common import UPDATE, WRITE, Environment, MemoryId, tool
from engram.requests.fields import Reason
from engram.service.feedback import give_feedback


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Give feedback on a memory", WRITE)
    def feedback(
        memory_id: MemoryId,
        kind: Annotated[
            FeedbackKind,
            Field(description="helpful (it was right and useful), wrong, or outdated."),
        ],
        note: Annotated[Reason, Field(description="What was wrong or what changed.")] = "",
    ) -> FeedbackOutcome:
        """Tell Engram how a recalled memory held up: helpful raises its confidence, wrong and
        outdated lower it so it ranks lower. If you know the correct fact, also remember it
        (it will supersede the old one) or update_memory."""
        return give_feedback(b.engram.memories, memory_id, kind, b.current_actor(), note)

    @tool(server, "Maintain memory", UPDATE)
    def maintain(
        dry_run: Annotated[
            bool, Field(description="Only report what would change (the default).")
        ] = True,
        environment: Environment = None,
    ) -> MaintenanceReport:
        """Sweep an environment: merge duplicates, supersede contradicted facts, flag decayed
        memories, compact old episodes. Dry run by default; run for real only when the user
        asks. Every change is a version and can be undone."""
        return b.engram.lifecycle.maintain(b.current_actor(), b.env(environment), dry_run=dry_run)
