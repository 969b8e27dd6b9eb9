"""Captured coding-agent sessions (written by the lifecycle hooks, ``engram hooks install``):
list them, read one's observations, search what was captured."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, Environment, tool
from engram.store.capture import CapturedSession, Observation

SessionId = Annotated[str, Field(description="A captured session id, 'ses_…', from list_sessions.")]


class SessionInfo(BaseModel):
    id: str
    agent: str
    session_id: str = Field(description="The agent's own session id")
    cwd: str
    title: str
    started_at: str
    last_event_at: str
    ended_at: str | None
    events: int
    episode_id: str | None = Field(description="The episode summarising it, once written")


class ObservationInfo(BaseModel):
    seq: int
    session: str
    kind: str
    at: str
    text: str
    tool: str
    command: str
    files: list[str]
    output: str
    failed: bool


class Sessions(BaseModel):
    sessions: list[SessionInfo]


class Observations(BaseModel):
    observations: list[ObservationInfo]


def _session(s: CapturedSession) -> SessionInfo:
    return SessionInfo(
        id=s.id,
        agent=s.agent,
        session_id=s.session_id,
        cwd=s.cwd,
        title=s.title,
        started_at=s.started_at.isoformat(),
        last_event_at=s.last_event_at.isoformat(),
        ended_at=s.ended_at.isoformat() if s.ended_at else None,
        events=s.events,
        episode_id=s.episode_id,
    )


def _observation(o: Observation) -> ObservationInfo:
    data = dataclasses.asdict(o)
    data.update(at=o.at.isoformat(), files=list(o.files))
    return ObservationInfo(**{k: data[k] for k in ObservationInfo.model_fields})


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "List captured sessions", READ)
    def list_sessions(
        limit: Annotated[int, Field(ge=1, le=100)] = 10, environment: Environment = None
    ) -> Sessions:
        """The coding-agent sessions captured in this project, most recent first (agent, first
        prompt, when, how many events, the episode that summarises it)."""
        sessions = b.engram.capture.list_sessions(
            b.current_actor(), b.env(environment), limit=limit
        )
        return Sessions(sessions=[_session(s) for s in sessions])

    @tool(server, "Read a session's observations", READ)
    def get_session_observations(
        session: SessionId,
        after: Annotated[int, Field(ge=0, description="Continue after this seq")] = 0,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> Observations:
        """What was captured in one session, in order: prompts, tool results (commands, files,
        excerpts of output, failures), the agent's last messages. Secrets were removed."""
        actor = b.current_actor()
        found = b.engram.capture.observations(session, actor, limit=limit, after=after)
        return Observations(observations=[_observation(o) for o in found])

    @tool(server, "Search captured observations", READ)
    def search_observations(
        query: Annotated[str, Field(description="Words to look for")],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        environment: Environment = None,
    ) -> Observations:
        """Find the prompts, commands and tool output of past sessions that match the words of
        a query (for details the session summaries leave out)."""
        actor = b.current_actor()
        hits = b.engram.capture.search(query, actor, b.env(environment), limit=limit)
        return Observations(observations=[_observation(o) for o in hits])
