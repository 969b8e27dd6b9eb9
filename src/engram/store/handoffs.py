"""The storage seam for handoffs (:mod:`engram.handoffs`): every state change is a
compare-and-set on the state it leaves, so a handoff is claimed exactly once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from engram.handoffs import Claim, Handoff, HandoffState


class HandoffStore(Protocol):
    def add(self, handoff: Handoff) -> None: ...

    def upsert_automatic(self, handoff: Handoff) -> Handoff:
        """Store the automatic handoff of a session (its id derives from the session), or bring
        it up to date while it is still open, or open it again, left now, when it expired and
        the session has done more since (its summary changed); returns the stored row."""
        ...

    def get(self, handoff_id: str) -> Handoff | None: ...

    def find(
        self,
        *,
        visible_to: str | None,
        environment_ids: Sequence[str] = (),
        states: Sequence[HandoffState] = (),
        limit: int,
        for_taking: bool = False,
    ) -> list[Handoff]:
        """Newest first; ``visible_to`` keeps those the user owns or that are addressed to
        them (None: everyone's; ``for_taking``: only those they may take, addressed to them or
        their own addressed to no one); empty ``environment_ids`` / ``states``: any."""
        ...

    def accept(self, handoff_id: str, claim: Claim) -> Handoff | None:
        """open → accepted, only if it is open now (compare-and-set); None when it was not."""
        ...

    def set_state(
        self, handoff_id: str, from_state: HandoffState, to_state: HandoffState, at: datetime
    ) -> Handoff | None:
        """``from_state`` → ``to_state`` if it is in ``from_state`` now; None when it was not."""
        ...

    def release(self, handoff_id: str, session: str, at: datetime) -> bool:
        """accepted → open again, only if ``session`` accepted it."""
        ...

    def accepted_by_session(self, session: str) -> list[Handoff]: ...

    def expire_older_automatic(
        self, owner: str, environment_id: str, cwd: str, before: datetime, at: datetime
    ) -> int:
        """Expire the owner's open automatic handoffs left in ``cwd`` before ``before``."""
        ...

    def expire_stale(self, created_before: datetime, at: datetime) -> int:
        """Expire the open handoffs created before ``created_before``."""
        ...
