"""Leaving and accepting a handoff (``POST /api/v1/handoffs`` and ``/{id}/accept``; the MCP
tools ``handoff_begin``, ``handoff_accept``, ``handoff_list``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.handoffs import (
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    MAX_LIST,
    MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS,
)
from engram.limits import NONBLANK_PATTERN, InputModel

Summary = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_SUMMARY_CHARS,
        pattern=NONBLANK_PATTERN,
        description="What was done, what failed, where the work stands (not only blanks)",
    ),
]
Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
HandoffItems = Annotated[list[Item], Field(max_length=MAX_ITEMS)]
Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]
"""An agent, a user (id or name), a session or an environment (name or id)."""
Cwd = Annotated[str, Field(max_length=4096, description="The working directory")]
ListLimit = Annotated[int, Field(ge=1, le=MAX_LIST)]
"""Handoffs in one listing (a query parameter over REST)."""


class HandoffRequest(InputModel):
    """A handoff to leave in a project."""

    summary: Summary
    environment: Name | None = Field(default=None, description="Name or id; default: yours")
    cwd: Cwd = ""
    from_agent: Name | None = Field(default=None, description="Who leaves it (default: 'api')")
    for_agent: Name | None = Field(default=None, description="Deliver it to this agent only")
    for_user: Name | None = Field(
        default=None, description="Address it to this user (id or name): they may accept it"
    )
    open_questions: HandoffItems = Field(default_factory=list)
    next_steps: HandoffItems = Field(default_factory=list)
    files_touched: HandoffItems = Field(default_factory=list)


class AcceptRequest(InputModel):
    """Who claims a handoff."""

    agent: Name | None = Field(default=None, description="The agent accepting it")
    session: Name | None = Field(default=None, description="The session accepting it")
