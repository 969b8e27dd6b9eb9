"""Handoffs between sessions: leave one for the next session (of any agent), see those waiting,
claim one (exactly once), withdraw one. Distinct from episodes (the project's history, shared
with its members): a handoff is a one-time note from you to your next session, owned by you."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.handoffs import Handoff, HandoffState
from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, UPDATE, WRITE, Environment, tool
from engram.requests.handoffs import Cwd, HandoffItems, ListLimit, Name, Summary

HandoffId = Annotated[
    str, Field(description="A handoff id, 'hof_…', from handoff_list or the session-start note.")
]
Items = Annotated[HandoffItems | None, Field(description="Short items, one sentence each.")]


class Handoffs(BaseModel):
    handoffs: list[Handoff]


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "Leave a handoff", WRITE)
    def handoff_begin(
        summary: Annotated[
            Summary, Field(description="What was done, what failed, where the work stands.")
        ],
        open_questions: Items = None,
        next_steps: Items = None,
        files_touched: Annotated[HandoffItems | None, Field(description="Paths changed.")] = None,
        from_agent: Annotated[
            Name | None, Field(description="You, the agent leaving it, e.g. 'claude'.")
        ] = None,
        for_agent: Annotated[
            Name | None, Field(description="Deliver it only to this agent, e.g. 'codex'.")
        ] = None,
        for_user: Annotated[
            Name | None,
            Field(
                description="Address it to another user (id or name) who can open the project: "
                "only they receive and may accept it."
            ),
        ] = None,
        cwd: Annotated[Cwd, Field(description="The working directory of the work.")] = "",
        environment: Environment = None,
    ) -> Handoff:
        """Hand the current work over to the next session in this project — in any agent —
        when you stop mid-task: it is delivered once, at that session's start, then it is
        gone. Use create_episode instead for a lasting record of what happened."""
        return b.engram.handoffs.begin(
            summary,
            b.current_actor(),
            environment=b.env(environment),
            cwd=cwd,
            from_agent=from_agent,
            for_agent=for_agent,
            for_user=for_user,
            open_questions=open_questions or [],
            next_steps=next_steps or [],
            files_touched=files_touched or [],
        )

    @tool(server, "List handoffs", READ)
    def handoff_list(
        state: Annotated[
            HandoffState, Field(description="open (waiting), accepted, expired or cancelled.")
        ] = HandoffState.OPEN,
        environment: Annotated[
            Name | None, Field(description="Environment name or id; omit for every project.")
        ] = None,
        limit: ListLimit = 10,
    ) -> Handoffs:
        """The handoffs you left and those addressed to you, newest first (summary, open
        questions, next steps, files, who left them and when). Listing claims nothing."""
        found = b.engram.handoffs.list(
            b.current_actor(), environment=environment, states=[state], limit=limit
        )
        return Handoffs(handoffs=found)

    @tool(server, "Accept a handoff", UPDATE)
    def handoff_accept(
        handoff: HandoffId,
        agent: Annotated[Name | None, Field(description="You, e.g. 'codex'.")] = None,
    ) -> Handoff:
        """Claim a waiting handoff and read it whole: exactly one session can; if another took
        it first the error says who and when. Use it for the id a session-start note offers."""
        return b.engram.handoffs.accept(handoff, b.current_actor(), agent=agent)

    @tool(server, "Cancel a handoff", UPDATE)
    def handoff_cancel(handoff: HandoffId) -> Handoff:
        """Withdraw a handoff you left that nobody accepted yet (it will not be delivered)."""
        return b.engram.handoffs.cancel(handoff, b.current_actor())
