"""The handoff sub-store behind the choke point: a handoff's text (summary, questions, next
steps, files, working directory) is scrubbed on its way in; state changes pass through."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engram.handoffs import Claim, Handoff, HandoffState
from engram.scrub.scrubber import Scrubber
from engram.store.handoffs import HandoffStore


class ScrubbingHandoffStore:
    def __init__(self, inner: HandoffStore, scrubber: Scrubber) -> None:
        self.inner = inner
        self._scrubber = scrubber

    def _s(self, text: str) -> str:
        return self._scrubber.scrub(text)[0] if text else text

    def _clean(self, h: Handoff) -> Handoff:
        return h.model_copy(
            update={
                "summary": self._s(h.summary),
                "cwd": self._s(h.cwd),
                "open_questions": [self._s(q) for q in h.open_questions],
                "next_steps": [self._s(n) for n in h.next_steps],
                "files_touched": [self._s(f) for f in h.files_touched],
            }
        )

    def add(self, handoff: Handoff) -> None:
        self.inner.add(self._clean(handoff))

    def upsert_automatic(self, handoff: Handoff) -> Handoff:
        return self.inner.upsert_automatic(self._clean(handoff))

    def get(self, handoff_id: str) -> Handoff | None:
        return self.inner.get(handoff_id)

    def find(
        self,
        *,
        visible_to: str | None,
        environment_ids: Sequence[str] = (),
        states: Sequence[HandoffState] = (),
        limit: int,
        for_taking: bool = False,
    ) -> list[Handoff]:
        return self.inner.find(
            visible_to=visible_to,
            environment_ids=environment_ids,
            states=states,
            limit=limit,
            for_taking=for_taking,
        )

    def accept(self, handoff_id: str, claim: Claim) -> Handoff | None:
        return self.inner.accept(handoff_id, claim)

    def set_state(
        self, handoff_id: str, from_state: HandoffState, to_state: HandoffState, at: datetime
    ) -> Handoff | None:
        return self.inner.set_state(handoff_id, from_state, to_state, at)

    def release(self, handoff_id: str, session: str, at: datetime) -> bool:
        return self.inner.release(handoff_id, session, at)

    def accepted_by_session(self, session: str) -> list[Handoff]:
        return self.inner.accepted_by_session(session)

    def expire_older_automatic(
        self, owner: str, environment_id: str, cwd: str, before: datetime, at: datetime
    ) -> int:
        return self.inner.expire_older_automatic(owner, environment_id, cwd, before, at)

    def expire_stale(self, created_before: datetime, at: datetime) -> int:
        return self.inner.expire_stale(created_before, at)
