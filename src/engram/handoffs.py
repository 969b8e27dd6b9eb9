"""A handoff: where one agent's work stands, for the next session (of any agent) to pick up.
Claimed exactly once: every state change is a compare-and-set on the state it leaves."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

MAX_SUMMARY_CHARS = 20_000
MAX_ITEMS = 50
"""Open questions, next steps, files touched: each list."""
MAX_ITEM_CHARS = 2_000
MAX_NAME_CHARS = 200
"""An agent, a user, a session, an environment as a handoff names them."""
MAX_LIST = 200
"""Handoffs in one listing."""


class HandoffState(StrEnum):
    OPEN = "open"
    ACCEPTED = "accepted"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


class Handoff(BaseModel):
    """Where one session's work stands, for the next session (of any agent) to pick up."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    id: str
    """``hof_…``"""
    owner: str
    """The user it belongs to: only they (and ``for_user``) may list, read or accept it."""
    environment_id: str
    """The project (environment) it was left in."""
    summary: str
    """What was done, what failed, where it stands."""
    from_agent: str
    """The agent (or interface) that left it."""
    created_at: datetime
    cwd: str = ""
    """The working directory it was left in (automatic handoffs are delivered there only)."""
    open_questions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    files_touched: list[str] = Field(default_factory=list)
    for_agent: str | None = None
    """Delivered only to this agent when set."""
    for_user: str | None = None
    """Addressed to this user (who may then read and accept it)."""
    automatic: bool = False
    """Made from a session's summary when it ended (a manual one beats it)."""
    source_session: str | None = None
    """The captured session it comes from (``ses_…``), if any."""
    state: HandoffState = HandoffState.OPEN
    """open → accepted (claimed exactly once) | expired (a newer automatic one from the same
    directory, or older than 14 days) | cancelled (by its owner)."""
    updated_at: datetime | None = None
    accepted_by: str | None = None
    """The user who accepted it."""
    accepted_agent: str | None = None
    """The agent that accepted it."""
    accepted_session: str | None = None
    """The captured session that accepted it (a session that does no work gives it back)."""
    accepted_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """Who accepts a handoff."""

    user_id: str
    at: datetime
    agent: str | None = None
    session: str | None = None
