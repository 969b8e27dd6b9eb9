"""Handoffs: where one session's work stands — summary, open questions, next steps, files — for
the next session in the same project, whichever agent runs it.

A handoff is made by hand (MCP ``handoff_begin``, REST, CLI, SDK) or automatically from a
captured session's summary, and delivered at session start through the briefing: a manual one
beats an automatic one; the newest automatic one left in the receiver's working directory wins
and expires the older ones from there; one whose source session is still live is held back for
:attr:`HandoffConfig.live_grace`. It is claimed exactly once (a compare-and-set on the open
state); a session that then does no work gives it back. In ``offer`` mode only its id, agent
and age are injected, and the agent accepts it through MCP.

Handoffs are owned: unlike a project's memories they are not shared with its members — only the
owner, and a user it is addressed to, may list, read or accept one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta

from engram.accounts import Role, Scope
from engram.actors import Actor
from engram.capture.handoffs import HandoffConfig, HandoffMode
from engram.capture.summary import SessionSummary
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from engram.handoffs import (
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    MAX_LIST,
    MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS,
    Claim,
    Handoff,
    HandoffState,
)
from engram.ids import new_id
from engram.limits import text_problem
from engram.service.environments import EnvironmentService, require_scope
from engram.store import Store
from engram.store.capture import CapturedSession

TTL = timedelta(days=14)
"""An open handoff older than this expires."""


def automatic_id(session_id: str) -> str:
    return "hof_" + hashlib.sha256(f"auto\0{session_id}".encode()).hexdigest()[:24]


def _items(name: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise InvalidInput(f"{name} must be a list of strings", field=name)
    if len(values) > MAX_ITEMS:
        raise InvalidInput(f"{name}: at most {MAX_ITEMS} items, got {len(values)}", field=name)
    out = []
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise InvalidInput(f"{name}[{i}] must be a string", field=name)
        value = value.strip()
        if len(value) > MAX_ITEM_CHARS:
            raise InvalidInput(
                f"{name}[{i}]: at most {MAX_ITEM_CHARS} characters, got {len(value)}", field=name
            )
        if value:
            out.append(value)
    return out


def _name(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if len(value) > MAX_NAME_CHARS:
        raise InvalidInput(f"{name}: at most {MAX_NAME_CHARS} characters", field=name)
    return value or None


def _agent(name: str | None) -> str | None:
    """An agent's name as the hooks give it ('Codex' is 'codex')."""
    return None if name is None else name.casefold()


def age(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 36 * 3600:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} days"


class HandoffService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        config: HandoffConfig | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self.config = config or HandoffConfig()

    # -- by hand (every edge) ----------------------------------------------------------------
    def begin(
        self,
        summary: str,
        actor: Actor,
        *,
        environment: str | None = None,
        cwd: str = "",
        from_agent: str | None = None,
        for_agent: str | None = None,
        for_user: str | None = None,
        open_questions: Sequence[str] = (),
        next_steps: Sequence[str] = (),
        files_touched: Sequence[str] = (),
    ) -> Handoff:
        """Leave a handoff in a project (you need to be a writer there)."""
        env = self._envs.resolve(environment, actor, Role.WRITER)
        if not isinstance(summary, str) or not summary.strip():
            raise InvalidInput("the summary is empty", field="summary")
        if len(summary) > MAX_SUMMARY_CHARS:
            raise InvalidInput(
                f"summary: at most {MAX_SUMMARY_CHARS} characters, got {len(summary)}",
                field="summary",
            )
        fields = {
            "summary": summary,
            "cwd": cwd,
            "open_questions": list(open_questions),
            "next_steps": list(next_steps),
            "files_touched": list(files_touched),
        }
        if problem := text_problem(fields):
            raise InvalidInput(problem, field="summary")
        if len(cwd) > 4096:
            raise InvalidInput("cwd: at most 4096 characters", field="cwd")
        addressee = self._user_id(for_user)
        if addressee not in (None, actor.user_id):
            other = Actor(addressee, actor.interface)
            if self._envs.visible(env.id, other) is None:
                raise InvalidInput(
                    f"for_user: {self._user_name(addressee)} has no access to environment "
                    f"{env.name!r}: share it with them first",
                    field="for_user",
                )
        now = self._clock()
        handoff = Handoff(
            id=new_id("hof_"),
            owner=actor.user_id,
            environment_id=env.id,
            summary=summary.strip(),
            from_agent=_name("from_agent", from_agent) or actor.interface,
            created_at=now,
            cwd=cwd.strip(),
            open_questions=_items("open_questions", open_questions),
            next_steps=_items("next_steps", next_steps),
            files_touched=_items("files_touched", files_touched),
            for_agent=_agent(_name("for_agent", for_agent)),
            for_user=addressee if addressee != actor.user_id else None,
            updated_at=now,
        )
        self._store.handoffs.add(handoff)
        stored = self._store.handoffs.get(handoff.id)
        assert stored is not None
        return stored

    def list(
        self,
        actor: Actor,
        *,
        environment: str | None = None,
        states: Sequence[HandoffState | str] = (HandoffState.OPEN,),
        limit: int = 20,
    ) -> list[Handoff]:
        """Your handoffs and those addressed to you, newest first (in one project when
        ``environment`` names it, else in all)."""
        require_scope(actor, Scope.READ)
        if not 1 <= limit <= MAX_LIST:
            raise InvalidInput(
                f"limit must be between 1 and {MAX_LIST}, got {limit}", field="limit"
            )
        try:
            wanted = [HandoffState(s) for s in states]
        except ValueError as exc:
            allowed = ", ".join(s.value for s in HandoffState)
            raise InvalidInput(f"state must be one of {allowed}", field="state") from exc
        # in the environments the actor can see now (a member removed keeps nothing there)
        env_ids = (
            sorted(self._envs.roles(actor))
            if environment is None
            else [self._envs.resolve(environment, actor).id]
        )
        self._expire_stale()
        if not env_ids:
            return []
        return self._store.handoffs.find(
            visible_to=actor.user_id, environment_ids=env_ids, states=wanted, limit=limit
        )

    def get(self, handoff_id: str, actor: Actor) -> Handoff:
        require_scope(actor, Scope.READ)
        self._expire_stale()
        return self._visible(actor, handoff_id)

    def accept(
        self,
        handoff_id: str,
        actor: Actor,
        *,
        agent: str | None = None,
        session: str | None = None,
    ) -> Handoff:
        """Claim a handoff: exactly one accept succeeds; any other gets :class:`Conflict`
        naming who accepted it and when."""
        require_scope(actor, Scope.WRITE)
        self._expire_stale()
        handoff = self._visible(actor, handoff_id)
        if handoff.for_user not in (None, actor.user_id):
            raise PermissionDenied(
                f"handoff {handoff_id} is for {self._user_name(handoff.for_user)}: only they "
                "may accept it (cancel it to take it back)",
                handoff=handoff_id,
            )
        who = _name("agent", agent)
        claim = Claim(actor.user_id, self._clock(), who, _name("session", session))
        accepted = self._store.handoffs.accept(handoff_id, claim)
        if accepted is None:
            current = self._store.handoffs.get(handoff_id)
            assert current is not None
            raise Conflict(self._not_open(current), handoff=handoff_id, state=current.state.value)
        return accepted

    def cancel(self, handoff_id: str, actor: Actor) -> Handoff:
        """Withdraw an open handoff (its owner only)."""
        require_scope(actor, Scope.WRITE)
        handoff = self._visible(actor, handoff_id)
        if handoff.owner != actor.user_id:
            raise PermissionDenied(
                f"handoff {handoff_id} is addressed to you; only its owner may cancel it",
                handoff=handoff_id,
            )
        cancelled = self._store.handoffs.set_state(
            handoff_id, HandoffState.OPEN, HandoffState.CANCELLED, self._clock()
        )
        if cancelled is None:
            current = self._store.handoffs.get(handoff_id)
            assert current is not None
            raise Conflict(self._not_open(current), handoff=handoff_id, state=current.state.value)
        return cancelled

    # -- from captured sessions ----------------------------------------------------------------
    def from_session(self, session: CapturedSession, summary: SessionSummary) -> Handoff | None:
        """The automatic handoff of a session that did some work (made at its first summary,
        brought up to date at the next while still open); it expires the older automatic ones
        left in the same directory."""
        if summary.empty:
            return None
        env = self._store.get_environment(session.environment_id)
        if env is None:
            return None
        now = self._clock()
        parts = [summary.title or "a session"]
        if summary.outcome:
            parts.append(f"Outcome: {summary.outcome}")
        if summary.failures:
            parts.append("Failed: " + "; ".join(summary.failures[:5]))
        if summary.decisions:
            parts.append("Decided: " + "; ".join(summary.decisions[:5]))
        if summary.commands:
            parts.append("Ran: " + "; ".join(summary.commands[:5]))  # each `quoted` already
        handoff = Handoff(
            id=automatic_id(session.id),
            owner=session.user_id or env.owner,
            environment_id=env.id,
            summary="\n".join(parts)[:MAX_SUMMARY_CHARS],
            from_agent=session.agent,
            created_at=now,
            cwd=session.cwd,
            open_questions=summary.open_questions[:MAX_ITEMS],
            next_steps=summary.next_steps[:MAX_ITEMS],
            files_touched=summary.files[:MAX_ITEMS],
            automatic=True,
            source_session=session.id,
            updated_at=now,
        )
        stored = self._store.handoffs.upsert_automatic(handoff)
        self._store.handoffs.expire_older_automatic(
            stored.owner, env.id, stored.cwd, stored.created_at, now
        )
        return stored

    def give_back(self, session_id: str) -> int:
        """A session that did no work returns the handoffs it claimed (open again)."""
        now = self._clock()
        return sum(
            self._store.handoffs.release(h.id, session_id, now)
            for h in self._store.handoffs.accepted_by_session(session_id)
        )

    def deliver(self, env_id: str, session: str, agent: str, cwd: str, actor: Actor) -> str:
        """The handoff section of a starting session's briefing ('' when there is none)."""
        if self.config.mode is HandoffMode.OFF:
            return ""
        now = self._clock()
        self._expire_stale()
        open_ = self._store.handoffs.find(
            visible_to=actor.user_id,
            environment_ids=[env_id],
            states=[HandoffState.OPEN],
            limit=50,
            for_taking=True,  # those left for teammates never crowd out the actor's own
        )
        mine = [
            h for h in open_ if h.for_agent in (None, _agent(agent)) and h.source_session != session
        ]
        automatic = [h for h in mine if h.automatic and h.cwd == cwd]
        if automatic:  # the newest wins: the older ones from this directory expire
            newest = automatic[0]
            self._store.handoffs.expire_older_automatic(
                newest.owner, env_id, cwd, newest.created_at, now
            )
            automatic = [newest]
        candidates = [
            h for h in [*(h for h in mine if not h.automatic), *automatic] if not self._live(h, now)
        ]
        if not candidates:
            return ""
        if self.config.mode is HandoffMode.OFFER:
            lines = [
                f"- {h.id} from {h.from_agent}, {age(now - h.created_at)} old"
                for h in candidates[:5]
            ]
            return (
                "Handoffs waiting for you (accept one with the MCP tool handoff_accept to read "
                "it):\n" + "\n".join(lines)
            )
        for h in candidates:
            claimed = self._store.handoffs.accept(h.id, Claim(actor.user_id, now, agent, session))
            if claimed is not None:
                return render(claimed, now)
        return ""

    # -- helpers -------------------------------------------------------------------------------
    def _visible(self, actor: Actor, handoff_id: str) -> Handoff:
        handoff = self._store.handoffs.get(handoff_id) if handoff_id.startswith("hof_") else None
        if (
            handoff is None
            or actor.user_id not in (handoff.owner, handoff.for_user)
            # and in an environment they can see now: a member removed keeps nothing there
            or self._envs.visible(handoff.environment_id, actor) is None
        ):
            raise NotFound(f"handoff {handoff_id!r} does not exist", handoff=handoff_id)
        return handoff

    def _user_id(self, ref: str | None) -> str | None:
        ref = _name("for_user", ref)
        if ref is None:
            return None
        user = self._store.accounts.get_user(ref) or self._store.accounts.find_user(ref)
        if user is None:  # like an environment that does not exist: 404
            raise NotFound(f"for_user: user {ref!r} does not exist", field="for_user")
        return user.id

    def _user_name(self, user_id: str) -> str:
        user = self._store.accounts.get_user(user_id)
        return user.name if user is not None else user_id

    def _not_open(self, h: Handoff) -> str:
        if h.state is HandoffState.ACCEPTED:
            who = self._user_name(h.accepted_by or "")
            via = f" in {h.accepted_agent}" if h.accepted_agent else ""
            when = f" at {h.accepted_at:%Y-%m-%d %H:%M:%S} UTC" if h.accepted_at else ""
            return f"handoff {h.id} is already accepted by {who}{via}{when}"
        return f"handoff {h.id} is {h.state.value}, not open"

    def _live(self, h: Handoff, now: datetime) -> bool:
        if h.source_session is None:
            return False
        source = self._store.capture.get_session(h.source_session)
        return (
            source is not None
            and source.ended_at is None
            and source.last_event_at > now - self.config.live_grace
        )

    def _expire_stale(self) -> None:
        now = self._clock()
        self._store.handoffs.expire_stale(now - TTL, now)


def render(h: Handoff, now: datetime) -> str:
    """A claimed handoff as the briefing shows it (factual, no instructions)."""
    where = f" in {h.cwd}" if h.cwd else ""
    lines = [
        f"Handoff {h.id} from {h.from_agent}, left {age(now - h.created_at)} ago{where} "
        "(accepted for this session):",
        h.summary,
    ]
    if h.open_questions:
        lines.append("Open questions:\n" + "\n".join(f"- {q}" for q in h.open_questions))
    if h.next_steps:
        lines.append("Next steps:\n" + "\n".join(f"- {s}" for s in h.next_steps))
    if h.files_touched:
        lines.append("Files touched: " + ", ".join(h.files_touched[:20]))
    return "\n".join(lines)
