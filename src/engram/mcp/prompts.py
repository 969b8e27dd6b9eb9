"""Prompts a client offers as slash commands: a start-of-session brief and a recall."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from engram.mcp.binding import Binding
from engram.retrieval.models import SearchResult
from engram.service.context import render_item


def _lines(result: SearchResult) -> str:
    return "".join(render_item(i.memory) for i in result.items) or "(nothing stored yet)\n"


def register(server: MCPServer[Any], b: Binding) -> None:
    @server.prompt(name="session_brief", title="Start-of-session brief")
    def session_brief(task: str = "") -> str:
        """The Soul and what Engram knows that matters now, to start a session with."""
        ctx = b.engram.context.assemble(b.current_actor(), task, environment=b.environment)
        focus = f" The task: {task}." if task else ""
        return (
            f"Here is what Engram remembers for environment '{ctx.environment}'.{focus} Follow "
            "the Soul, use these memories, and recall more with the recall tool when needed. "
            "Remember new lasting facts and decisions as they come up.\n\n" + ctx.text
        )

    @server.prompt(name="recall_about", title="Recall what we know about…")
    def recall_about(topic: str) -> str:
        """What Engram knows about a topic: facts, past sessions and procedures."""
        result = b.engram.search.search(
            topic, b.current_actor(), environment=b.environment, limit=15
        )
        return (
            f"What do we know about {topic}? Stored memories, best first:\n\n{_lines(result)}\n"
            "Summarise what is known, say what looks outdated or contradictory, and use "
            "feedback or update_memory on anything the user corrects."
        )
