"""A request's captured events made ready for the group commit: validated, their environments
resolved, what they say about each session merged into one touch; and what a queued request
waits with."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from engram.actors import Actor
from engram.capture.bounds import EXCERPT_BYTES, PROMPT_BYTES, bound, cut
from engram.capture.events import ENDING_KINDS, Event, EventKind, from_dict, validation_errors
from engram.capture.sessions import parse_at, session_key
from engram.errors import InvalidInput
from engram.limits import text_problem
from engram.store.capture import Observation, SessionTouch

MAX_EVENTS_PER_REQUEST = 500


@dataclass(frozen=True)
class IngestResult:
    stored: int
    duplicates: int
    sessions: list[str] = field(default_factory=list)
    """Engram's ids of the sessions the events belong to."""


class Answer(Protocol):
    """Where a queued request's outcome goes (a :class:`~concurrent.futures.Future`, or what
    hands it to an event loop); called by the writer thread."""

    def set_result(self, result: IngestResult, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


@dataclass
class Pending:
    observations: list[Observation]
    touches: list[SessionTouch]
    ending: set[str]
    future: Answer

    @property
    def size(self) -> int:
        return len(self.observations)


@dataclass
class Unprepared:
    """A request queued before its caller was authenticated
    (:meth:`engram.service.capture.CaptureService.submit_for`)."""

    raw: Sequence[Any]
    caller: Hashable
    authenticate: Callable[[], Actor]
    future: Answer

    @property
    def size(self) -> int:
        return len(self.raw)


EnvIds = dict[tuple[Actor, str | None, str | None], str]
"""The environment id of each (actor, project, explicit environment) resolved (and its role
checked) in one group."""


EnvironmentOf = Callable[[str | None, str | None, Actor], str]
"""The environment id of (a project, an explicit environment) for an actor: the explicit one,
which must exist, else the project's (created on first use); its role checked."""


def prepare_events(
    raw: Sequence[Any],
    actor: Actor,
    now: datetime,
    environment_of: EnvironmentOf,
    env_ids: EnvIds | None = None,
) -> Pending:
    """Validate the wire events and resolve their environments (nothing stored yet); each
    (actor, project) once per ``env_ids``."""
    if not isinstance(raw, list) or not raw:
        raise InvalidInput("'events' must be a non-empty list", field="events")
    if len(raw) > MAX_EVENTS_PER_REQUEST:
        raise InvalidInput(
            f"at most {MAX_EVENTS_PER_REQUEST} events per request, got {len(raw)}",
            field="events",
        )
    events: list[Event] = []
    for i, item in enumerate(raw):
        errors = validation_errors(item)
        if not errors and (problem := text_problem(item)):
            errors = [problem]
        if errors:
            raise InvalidInput(f"events[{i}]: " + "; ".join(errors), field=f"events[{i}]")
        events.append(from_dict(item))
    touches: dict[str, SessionTouch] = {}
    observations: list[Observation] = []
    ending: set[str] = set()
    env_ids = {} if env_ids is None else env_ids
    for ev in events:
        env_id = env_ids.get((actor, ev.project, ev.environment))
        if env_id is None:
            env_id = environment_of(ev.project, ev.environment, actor)
            env_ids[actor, ev.project, ev.environment] = env_id
        sid = session_key(env_id, ev.agent.value, ev.session_id)
        at = parse_at(ev.at, now)
        title = cut(ev.text.splitlines()[0], 200) if ev.kind is EventKind.PROMPT and ev.text else ""
        ended = at if ev.kind is EventKind.SESSION_END else None
        old = touches.get(sid)
        if old is None:
            touches[sid] = SessionTouch(
                sid,
                env_id,
                ev.agent.value,
                ev.session_id,
                ev.cwd,
                at,
                at,
                ended,
                title,
                actor.user_id,
            )
        else:
            touches[sid] = SessionTouch(
                sid,
                env_id,
                old.agent,
                old.session_id,
                old.cwd or ev.cwd,
                min(old.first_at, at),
                max(old.last_at, at),
                ended or old.ended_at,
                old.title or title,
                old.user_id,
            )
        if ev.kind in ENDING_KINDS:
            ending.add(sid)
        observations.append(
            Observation(
                key=ev.key,
                session=sid,
                environment_id=env_id,
                agent=ev.agent.value,
                kind=ev.kind.value,
                at=at,
                hook=ev.hook[:100],
                text=bound(ev.text, PROMPT_BYTES),
                tool=ev.tool[:200],
                command=bound(ev.command, EXCERPT_BYTES),
                files=tuple(f[:1024] for f in ev.files[:50]),
                output=bound(ev.output, EXCERPT_BYTES),
                failed=ev.failed,
                detail=ev.detail[:200],
            )
        )
    return Pending(observations, list(touches.values()), ending, Future())


def result_of(pending: Pending, stored: set[str]) -> IngestResult:
    """A request's answer, from the keys its group stored."""
    n = sum(1 for o in pending.observations if o.key in stored)
    return IngestResult(n, len(pending.observations) - n, sorted(t.id for t in pending.touches))


def merge_touch(a: SessionTouch, b: SessionTouch) -> SessionTouch:
    return SessionTouch(
        a.id,
        a.environment_id,
        a.agent,
        a.session_id,
        a.cwd or b.cwd,
        min(a.first_at, b.first_at),
        max(a.last_at, b.last_at),
        b.ended_at or a.ended_at,
        a.title or b.title,
        a.user_id or b.user_id,
    )
