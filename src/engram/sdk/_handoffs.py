"""The handoffs' calls (``client.handoffs``), described once without I/O like those in
``_calls``: leave one, list yours (and those addressed to you), read, accept (exactly once:
a second accept raises :class:`~engram.errors.Conflict` naming who has it), cancel."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from engram.handoffs import Handoff, HandoffState
from engram.sdk._calls import Call, _params, seg


class HandoffCalls:
    base = "/api/v1/handoffs"

    def begin(
        self,
        summary: str,
        *,
        environment: str | None = None,
        cwd: str = "",
        from_agent: str | None = None,
        for_agent: str | None = None,
        for_user: str | None = None,
        open_questions: Sequence[str] = (),
        next_steps: Sequence[str] = (),
        files_touched: Sequence[str] = (),
    ) -> Call[Handoff]:
        given = {
            "environment": environment,
            "from_agent": from_agent,
            "for_agent": for_agent,
            "for_user": for_user,
        }
        body = {
            "summary": summary,
            "cwd": cwd,
            "open_questions": list(open_questions),
            "next_steps": list(next_steps),
            "files_touched": list(files_touched),
            **{k: v for k, v in given.items() if v is not None},
        }
        return Call("POST", self.base, Handoff, {}, body)

    def list(
        self,
        *,
        environment: str | None = None,
        states: Sequence[HandoffState | str] = (),
        limit: int = 20,
    ) -> Call[builtins.list[Handoff]]:
        params = _params(environment=environment, state=[str(s) for s in states], limit=limit)
        return Call("GET", self.base, builtins.list[Handoff], params)

    def get(self, handoff_id: str) -> Call[Handoff]:
        return Call("GET", f"{self.base}/{seg(handoff_id)}", Handoff)

    def accept(
        self, handoff_id: str, *, agent: str | None = None, session: str | None = None
    ) -> Call[Handoff]:
        body = {k: v for k, v in {"agent": agent, "session": session}.items() if v is not None}
        return Call("POST", f"{self.base}/{seg(handoff_id)}/accept", Handoff, {}, body)

    def cancel(self, handoff_id: str) -> Call[Handoff]:
        return Call("POST", f"{self.base}/{seg(handoff_id)}/cancel", Handoff)
