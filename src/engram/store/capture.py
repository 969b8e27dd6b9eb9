"""The storage seam for captured coding-agent sessions: one row per session, one per observed
event (stored once per idempotency key, searchable by keyword)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CapturedSession:
    id: str
    """Engram's id of the session (derived from the environment, agent and agent's id)."""
    environment_id: str
    agent: str
    session_id: str
    """The agent's own session id."""
    cwd: str
    started_at: datetime
    last_event_at: datetime
    events: int = 0
    ended_at: datetime | None = None
    episode_id: str | None = None
    """The episode summarising it, once it stopped or went idle."""
    summarized_at: datetime | None = None
    title: str = ""
    user_id: str = ""
    """The user whose hooks captured it ('' for sessions older than this column)."""


@dataclass(frozen=True, slots=True)
class Observation:
    key: str
    """The idempotency key: an event is stored once per key."""
    session: str
    """:attr:`CapturedSession.id`."""
    environment_id: str
    agent: str
    kind: str
    at: datetime
    hook: str = ""
    text: str = ""
    tool: str = ""
    command: str = ""
    files: tuple[str, ...] = ()
    output: str = ""
    failed: bool = False
    detail: str = ""
    seq: int = 0
    """Storage order (set by the store)."""


@dataclass(frozen=True, slots=True)
class SessionTouch:
    """What one batch says about a session: created if new, else its counters moved on."""

    id: str
    environment_id: str
    agent: str
    session_id: str
    cwd: str
    first_at: datetime
    last_at: datetime
    ended_at: datetime | None = None
    title: str = ""
    user_id: str = ""


class CaptureStore(Protocol):
    def add_observations(
        self, sessions: Sequence[SessionTouch], observations: Sequence[Observation]
    ) -> list[str]:
        """In one transaction: upsert the sessions, then store each observation whose key is
        new. Returns the keys stored now (a key already stored is skipped)."""
        ...

    def get_session(self, session_id: str) -> CapturedSession | None: ...

    def list_sessions(
        self,
        environment_ids: Sequence[str],
        *,
        limit: int,
        agent: str | None = None,
        summarised: bool = False,
    ) -> list[CapturedSession]:
        """Sessions in these environments (all when empty), most recent activity first;
        ``summarised``: only those with an episode (a session that did nothing has none)."""
        ...

    def observations(self, session_id: str, *, limit: int, after: int = 0) -> list[Observation]:
        """A session's observations in the order they happened, after the cursor ``after``."""
        ...

    def search_observations(
        self, environment_ids: Sequence[str], query: str, *, limit: int
    ) -> list[Observation]:
        """Observations matching the words of ``query`` (plain text), best first."""
        ...

    def set_episode(self, session_id: str, episode_id: str, at: datetime) -> None:
        """Record the episode summarising the session as of ``at``."""
        ...

    def unsummarized(self, idle_since: datetime, *, limit: int) -> list[CapturedSession]:
        """Sessions with events after their last summary and none since ``idle_since``."""
        ...

    def count_observations(self, environment_ids: Sequence[str]) -> int: ...
