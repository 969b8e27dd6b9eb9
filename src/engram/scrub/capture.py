"""The capture sub-store behind the choke point: observations and session titles scrubbed on
their way in (the hook client scrubs first; this is the guarantee)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime

from engram.scrub.scrubber import Scrubber
from engram.store.capture import CapturedSession, CaptureStore, Observation, SessionTouch


class ScrubbingCaptureStore:
    def __init__(self, inner: CaptureStore, scrubber: Scrubber) -> None:
        self.inner = inner
        self._scrubber = scrubber

    def _s(self, text: str) -> str:
        return self._scrubber.scrub(text)[0] if text else text

    def add_observations(
        self, sessions: Sequence[SessionTouch], observations: Sequence[Observation]
    ) -> list[str]:
        clean_sessions = [
            dataclasses.replace(s, cwd=self._s(s.cwd), title=self._s(s.title)) for s in sessions
        ]
        clean = [
            dataclasses.replace(
                o,
                files=tuple(self._s(f) for f in o.files),
                text=self._s(o.text),
                tool=self._s(o.tool),
                command=self._s(o.command),
                output=self._s(o.output),
                detail=self._s(o.detail),
            )
            for o in observations
        ]
        return self.inner.add_observations(clean_sessions, clean)

    def get_session(self, session_id: str) -> CapturedSession | None:
        return self.inner.get_session(session_id)

    def list_sessions(
        self,
        environment_ids: Sequence[str],
        *,
        limit: int,
        agent: str | None = None,
        summarised: bool = False,
    ) -> list[CapturedSession]:
        return self.inner.list_sessions(
            environment_ids, limit=limit, agent=agent, summarised=summarised
        )

    def observations(self, session_id: str, *, limit: int, after: int = 0) -> list[Observation]:
        return self.inner.observations(session_id, limit=limit, after=after)

    def search_observations(
        self, environment_ids: Sequence[str], query: str, *, limit: int
    ) -> list[Observation]:
        return self.inner.search_observations(environment_ids, query, limit=limit)

    def set_episode(self, session_id: str, episode_id: str, at: datetime) -> None:
        self.inner.set_episode(session_id, episode_id, at)

    def unsummarized(self, idle_since: datetime, *, limit: int) -> list[CapturedSession]:
        return self.inner.unsummarized(idle_since, limit=limit)

    def count_observations(self, environment_ids: Sequence[str]) -> int:
        return self.inner.count_observations(environment_ids)
