"""Coding-agent sessions: events captured by the hooks become observations (stored once per
idempotency key, searchable), each session becomes an episode without an LLM when it stops,
ends or goes idle, and a new session starts with one bounded block of what matters.

Ingest is a group commit: concurrent requests queue their events and one writer thread stores
every queued batch in one transaction, then answers them all, so a request is answered once its
events are durable and throughput grows with concurrency. A request may leave its caller to be
authenticated by the writer (:meth:`CaptureService.submit_for`): the requests of one group with
the same credentials are then authenticated once, and each environment they write to resolved
and its role checked once, at the state of the store the group commits on. Past
``max_pending`` queued events a request is refused at once (:class:`Saturated`, HTTP 429): the
hook spools and retries later instead of waiting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

from engram.accounts import Role, Scope
from engram.actors import Actor
from engram.capture.events import EventKind
from engram.capture.summary import SessionSummary, summarize
from engram.clock import Clock
from engram.errors import EngramError, InvalidInput, NotFound, Saturated
from engram.models import (
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    Source,
)
from engram.service.briefing import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_RECALL_TOKENS,
    MAX_CONTEXT_TOKENS,
    RECALL_FLOOR,
    Briefing,
    ProfileFn,
    RecallFn,
    SoulFn,
)
from engram.service.capture_batch import (
    MAX_EVENTS_PER_REQUEST,
    Answer,
    EnvIds,
    IngestResult,
    Pending,
    Unprepared,
    merge_touch,
    prepare_events,
    result_of,
)
from engram.service.environments import EnvironmentService, is_bare, require_scope
from engram.service.handoffs import HandoffService
from engram.service.memories import MemoryService
from engram.store import Store
from engram.store.capture import CapturedSession, Observation, SessionTouch

log = logging.getLogger("engram.capture")
RememberFn = Callable[[NewMemory, Actor, str], object]
"""Stores a fact with the lifecycle's dedup and contradiction rules."""
LearnFn = Callable[[str, str, Sequence[str]], object]
"""(user id, environment id, the user's preference sentences) -> the cross-project profile."""


class CaptureService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        memories: MemoryService,
        *,
        soul: SoulFn | None = None,
        recall: RecallFn | None = None,
        remember: RememberFn | None = None,
        profile: ProfileFn | None = None,
        learn: LearnFn | None = None,
        handoffs: HandoffService | None = None,
        max_pending: int = 20_000,
        idle_after: timedelta = timedelta(minutes=15),
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self._memories = memories
        self._remember = remember
        self._learn = learn
        self._handoffs = handoffs
        self.briefing = Briefing(
            store, environments, self._summarize_quietly, soul, recall, profile
        )
        self.max_pending = max_pending
        self.idle_after = idle_after
        lock = threading.RLock()
        self._lock = threading.Condition(lock)
        self._queued = threading.Condition(lock)
        """Wakes the writer alone (the summariser waits on ``_lock``)."""
        self._queue: list[Pending | Unprepared] = []
        self._writer_idle = False
        self._queued_events = 0
        self._to_summarize: set[str] = set()
        self._summarizing = 0
        self._stopping = False
        self._writer: threading.Thread | None = None
        self._summarizer: threading.Thread | None = None
        self._env_cache: dict[tuple[str, str, str], str] = {}

    # -- ingest ------------------------------------------------------------------------------
    def _environment_id(self, project: str | None, explicit: str | None, actor: Actor) -> str:
        """The environment named ``explicit`` (ENGRAM_ENV: it must exist, else NotFound), else
        the environment of a project (created on first use), else the actor's default."""
        cache_key = (actor.user_id, project or "", explicit or "")
        cached = self._env_cache.get(cache_key)
        if cached is not None:
            # only the id is cached: scope and role are checked again on every call
            try:
                return self._envs.resolve(cached, actor, Role.WRITER).id
            except NotFound:  # deleted since: a project's is made again below
                del self._env_cache[cache_key]
        if explicit is not None:
            env = self._envs.resolve(explicit, actor, Role.WRITER)
        elif project is None:
            env = self._envs.resolve(None, actor, Role.WRITER)
        elif not is_bare(project):  # an id, or owner/name (a team's project): it must exist
            env = self._envs.resolve(project, actor, Role.WRITER)
        else:
            # a project is the actor's own environment: never one shared with them by name
            try:
                env = self._envs.resolve(project, actor, Role.WRITER, shared=False)
            except NotFound:
                try:
                    env = self._envs.create(project, actor, f"The project {project}")
                except EngramError:  # created meanwhile by a concurrent request
                    env = self._envs.resolve(project, actor, Role.WRITER, shared=False)
        self._env_cache[cache_key] = env.id
        return env.id

    def prepare(self, raw: Sequence[Any], actor: Actor, env_ids: EnvIds | None = None) -> Pending:
        """Validate the wire events and resolve their environments (nothing stored yet); each
        (actor, project) once per ``env_ids``."""
        return prepare_events(raw, actor, self._clock(), self._environment_id, env_ids)

    def ingest(self, raw: Sequence[Any], actor: Actor) -> IngestResult:
        """Store the events now (in this thread); sessions that stopped are summarised in the
        background."""
        pending = self.prepare(raw, actor)
        stored = self._store.capture.add_observations(pending.touches, pending.observations)
        self._schedule(pending.ending)
        return result_of(pending, set(stored))

    def submit(self, raw: Sequence[Any], actor: Actor) -> Future[IngestResult]:
        """Queue the events for the group-commit writer; the future resolves once they are
        stored. :class:`Saturated` at once when too many events wait."""
        pending = self.prepare(raw, actor)
        pending.future = future = Future[IngestResult]()
        self._enqueue(pending)
        return future

    def submit_for(
        self,
        raw: Sequence[Any],
        caller: Hashable,
        authenticate: Callable[[], Actor],
        answer: Answer,
    ) -> None:
        """As :meth:`submit`, the caller authenticated by the writer: ``authenticate()`` is
        called once per distinct ``caller`` (the request's credentials) in each group, before
        the events are validated; its error (or the events') fails this request alone. The
        outcome goes to ``answer``. :class:`Saturated` at once when too many events wait."""
        self._enqueue(Unprepared(raw, caller, authenticate, answer))

    def _enqueue(self, item: Pending | Unprepared) -> None:
        with self._lock:
            if self._stopping:
                raise Saturated("the server is shutting down")
            if self._queued_events + item.size > self.max_pending:
                raise Saturated(
                    f"{self._queued_events} captured events are waiting to be stored; retry later"
                )
            self._queue.append(item)
            self._queued_events += item.size
            self._start_threads()
            if self._writer_idle:
                self._queued.notify()

    def _start_threads(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(
                target=self._write_loop, name="engram-capture-writer", daemon=True
            )
            self._writer.start()
        if self._summarizer is None:
            self._summarizer = threading.Thread(
                target=self._summarize_loop, name="engram-capture-summaries", daemon=True
            )
            self._summarizer.start()

    def _write_loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping:
                    self._writer_idle = True
                    self._queued.wait()
                    self._writer_idle = False
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
            try:
                self._write_batch(self._prepared(batch))
            finally:
                with self._lock:
                    self._queued_events -= sum(item.size for item in batch)

    def _prepared(self, batch: list[Pending | Unprepared]) -> list[Pending]:
        """The group's requests ready to store: callers authenticated and environments
        resolved once each; a request that fails either is answered its error now."""
        actors: dict[Hashable, Actor | Exception] = {}
        env_ids: EnvIds = {}
        ready: list[Pending] = []
        for item in batch:
            if isinstance(item, Pending):
                ready.append(item)
                continue
            try:
                actor = actors.get(item.caller)
                if actor is None:
                    try:
                        actor = actors[item.caller] = item.authenticate()
                    except EngramError as exc:
                        actor = actors[item.caller] = exc
                if isinstance(actor, Exception):
                    raise actor
                pending = self.prepare(item.raw, actor, env_ids)
            except Exception as exc:
                item.future.set_exception(exc)
                continue
            pending.future = item.future
            ready.append(pending)
        return ready

    def _write_batch(self, batch: list[Pending]) -> None:
        if not batch:
            return
        touches: dict[str, SessionTouch] = {}
        for p in batch:
            for t in p.touches:
                old = touches.get(t.id)
                touches[t.id] = t if old is None else merge_touch(old, t)
        observations = [o for p in batch for o in p.observations]
        try:
            stored = set(self._store.capture.add_observations(list(touches.values()), observations))
        except Exception as exc:
            # an environment deleted under the cache, say: forget the cache, and retry each
            # request alone so that one bad request does not fail the others
            self._env_cache.clear()
            if len(batch) > 1:
                for p in batch:
                    self._write_batch([p])
                return
            log.warning("capture write failed: %s", exc)
            batch[0].future.set_exception(exc)
            return
        ending: set[str] = set()
        for p in batch:
            ending |= p.ending
            p.future.set_result(result_of(p, stored))
        self._schedule(ending)

    # -- summaries ---------------------------------------------------------------------------
    def _schedule(self, sessions: set[str]) -> None:
        if not sessions:
            return
        with self._lock:
            self._to_summarize |= sessions
            self._start_threads()
            self._lock.notify_all()

    def _summarize_loop(self) -> None:
        sweep_every = max(min(self.idle_after.total_seconds() / 4, 60.0), 0.05)
        last_sweep = 0.0
        while True:
            with self._lock:
                if not self._to_summarize and not self._stopping:
                    self._lock.wait(timeout=sweep_every)
                if self._stopping:
                    return
                todo, self._to_summarize = self._to_summarize, set()
                self._summarizing = len(todo)
            for sid in sorted(todo):
                self._summarize_quietly(sid)
            with self._lock:
                self._summarizing = 0
            now = self._clock().timestamp()
            if now - last_sweep >= sweep_every:
                last_sweep = now
                try:
                    self.sweep_idle()
                except Exception as exc:  # e.g. the store closed under a forgotten service
                    log.warning("idle sweep failed: %s", getattr(exc, "message", exc))

    def _summarize_quietly(self, sid: str) -> None:
        try:
            self.summarize_session(sid)
        except Exception:
            log.exception("summarising a captured session failed", extra={"session": sid})

    def sweep_idle(self) -> int:
        """Summarise the sessions idle for ``idle_after`` that have unsummarised events (some
        agents never say a session ended); returns how many."""
        idle = self._store.capture.unsummarized(self._clock() - self.idle_after, limit=100)
        for session in idle:
            self._summarize_quietly(session.id)
        return len(idle)

    def summarize_session(self, sid: str) -> Memory | None:
        """Write (or bring up to date) the episode of a captured session; None when the session
        has nothing to summarise yet."""
        session = self._store.capture.get_session(sid)
        if session is None:
            raise NotFound(f"no captured session {sid}", session=sid)
        observations = self._store.capture.observations(sid, limit=5000)
        summary = summarize(observations, session.cwd)
        now = self._clock()
        if summary.empty:
            # a session that did no work gives its claim back, once it ended or went idle (not
            # when a session starting beside it summarises it early)
            over = session.ended_at is not None or session.last_event_at < now - self.idle_after
            if self._handoffs is not None and over:
                self._handoffs.give_back(sid)
            return None
        env = self._store.get_environment(session.environment_id)
        if env is None:
            return None
        actor = Actor(env.owner, "capture")
        content = summary.render(session.agent)
        details = EpisodeDetails(
            period_start=summary.started,
            period_end=max(summary.ended or now, summary.started or now),
            agent=session.agent,
            session_id=session.session_id,
            key_decisions=summary.decisions,
            open_questions=summary.open_questions,
        )
        metadata = {
            "capture_session": sid,
            "observations": len(observations),
            "summary": _summary_meta(summary),
        }
        episode: Memory | None = None
        if session.episode_id is not None:
            try:
                episode = self._memories.update(
                    session.episode_id,
                    MemoryPatch(content=content, episode=details, metadata=metadata),
                    actor,
                    reason="the session went on",
                )
            except NotFound:
                episode = None
        if episode is None:
            episode = self._memories.add(
                NewMemory(
                    layer=Layer.EPISODE,
                    content=content,
                    category="session",
                    tags=["session", session.agent],
                    importance=0.5,
                    source=Source.AGENT,
                    author=session.agent,
                    metadata=metadata,
                    episode=details,
                    thread=session.session_id[:200],
                ),
                actor,
                env.id,
            )
            self._remember_stated(summary, actor, env.id)
        if self._handoffs is not None:  # first: once the episode shows, so does the handoff
            self._handoffs.from_session(session, summary)
        if self._learn is not None:  # only the user's prompts: never tool output
            self._learn(env.owner, env.id, summary.preferences)
        self._store.capture.set_episode(sid, episode.id, session.last_event_at)
        return episode

    def _remember_stated(self, summary: SessionSummary, actor: Actor, env_id: str) -> None:
        """Rules the user stated in their prompts become preference facts, and decisions they
        stated ("we decided to use pnpm workspaces") decision facts, which the next sessions'
        briefs list among the project's decisions after the session itself has aged out of
        them: through the lifecycle when there is one (the same rule said again is merged, a
        changed one supersedes the old), else once per exact wording. Never the agent's
        words."""
        stated = [(s, "preference", 0.7) for s in summary.preferences]
        stated += [(s, "decision", 0.75) for s in summary.stated_decisions]
        for sentence, category, importance in stated:
            new = NewMemory(
                content=sentence,
                category=category,
                tags=["session"],
                importance=importance,
                source=Source.EXTRACTED,
            )
            if self._remember is not None:
                self._remember(new, actor, env_id)
                continue
            existing = self._store.list_memories(
                MemoryFilter(environment_ids=[env_id], categories=[category]), limit=200
            )
            if not any(m.content == sentence for m in existing):
                self._memories.add(new, actor, env_id)

    # -- reads -------------------------------------------------------------------------------
    def _env_ids(self, actor: Actor, environment: str | None) -> list[str]:
        return [self._envs.resolve(environment, actor).id]

    def list_sessions(
        self, actor: Actor, environment: str | None = None, *, limit: int = 20
    ) -> list[CapturedSession]:
        if not 1 <= limit <= 200:
            raise InvalidInput(f"limit must be between 1 and 200, got {limit}", field="limit")
        return self._store.capture.list_sessions(self._env_ids(actor, environment), limit=limit)

    def get_session(self, sid: str, actor: Actor) -> CapturedSession:
        session = self._store.capture.get_session(sid)
        if session is None:
            raise NotFound(f"no captured session {sid}", session=sid)
        self._envs.resolve(session.environment_id, actor)  # visible to this actor, or NotFound
        return session

    def summarize(self, sid: str, actor: Actor) -> Memory | None:
        """Write or refresh a session's episode now: a write, so it needs the writer role."""
        session = self._store.capture.get_session(sid)
        if session is None:
            raise NotFound(f"no captured session {sid}", session=sid)
        self._envs.resolve(session.environment_id, actor, Role.WRITER)  # a writer, or NotFound
        return self.summarize_session(sid)

    def observations(
        self, sid: str, actor: Actor, *, limit: int = 200, after: int = 0
    ) -> list[Observation]:
        if not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be between 1 and 1000, got {limit}", field="limit")
        self.get_session(sid, actor)
        return self._store.capture.observations(sid, limit=limit, after=after)

    def search(
        self, query: str, actor: Actor, environment: str | None = None, *, limit: int = 20
    ) -> list[Observation]:
        if not query.strip():
            raise InvalidInput("the query is empty", field="query")
        if not 1 <= limit <= 200:
            raise InvalidInput(f"limit must be between 1 and 200, got {limit}", field="limit")
        env_ids = self._env_ids(actor, environment)
        return self._store.capture.search_observations(env_ids, query, limit=limit)

    # -- session start -----------------------------------------------------------------------
    def session_start(
        self, raw: Sequence[Any], actor: Actor, *, max_tokens: int = DEFAULT_CONTEXT_TOKENS
    ) -> tuple[IngestResult, str]:
        """Store the events and return the context block for the session that starts."""
        if not 100 <= max_tokens <= MAX_CONTEXT_TOKENS:
            raise InvalidInput(
                f"max_tokens must be between 100 and {MAX_CONTEXT_TOKENS}, got {max_tokens}",
                field="max_tokens",
            )
        require_scope(actor, Scope.READ)  # the answer holds the project's memories
        pending = self.prepare(raw, actor)
        # the block is for the session that starts: its session_start event, else the first
        # event's session (a harness that sends only a prompt first still gets its brief)
        start = next(
            (o for o in pending.observations if o.kind == EventKind.SESSION_START.value),
            pending.observations[0],
        )
        stored = self._store.capture.add_observations(pending.touches, pending.observations)
        self._schedule(pending.ending)
        cwd = next((t.cwd for t in pending.touches if t.id == start.session), "")
        handoff = ""
        if self._handoffs is not None:
            self.briefing.catch_up(start.environment_id, start.session)
            handoff = self._handoffs.deliver(
                start.environment_id, start.session, start.agent, cwd, actor
            )
        note = self._shadow_note(start.environment_id, actor)
        lead = "\n\n".join(x for x in (note, handoff) if x)
        block = self.briefing.block(
            start.environment_id, start.session, max_tokens, actor, lead=lead
        )
        return result_of(pending, set(stored)), block

    def _shadow_note(self, env_id: str, actor: Actor) -> str:
        """When the session works in the actor's own environment and a teammate shares one of
        the same name, say so: their sessions would otherwise work apart from the team's."""
        shared = self._envs.shadowed(env_id, actor)
        if not shared:
            return ""
        name = shared[0].rpartition("/")[2]
        return (
            f"Note: this session works in your own environment {name!r}; {', '.join(shared)} "
            "is shared with you under that name. To work in it from this repository, set "
            f'[environment] name = "{shared[0]}" in .engram.toml.'
        )

    def prompt_recall(
        self,
        raw: Sequence[Any],
        actor: Actor,
        *,
        max_tokens: int = DEFAULT_RECALL_TOKENS,
        floor: float = RECALL_FLOOR,
    ) -> tuple[IngestResult, str]:
        """Store a prompt's events and return the memories relevant to it that this session
        has not been shown yet (above ``floor``, at most ``max_tokens``; '' when none)."""
        if not 50 <= max_tokens <= MAX_CONTEXT_TOKENS:
            raise InvalidInput(
                f"max_tokens must be between 50 and {MAX_CONTEXT_TOKENS}, got {max_tokens}",
                field="max_tokens",
            )
        require_scope(actor, Scope.READ)  # the answer holds the project's memories
        pending = self.prepare(raw, actor)
        prompt = next((o for o in pending.observations if o.kind == EventKind.PROMPT.value), None)
        stored = self._store.capture.add_observations(pending.touches, pending.observations)
        # no prompt among the events: they are stored, and there is nothing to recall for
        block = "" if prompt is None else self.briefing.for_prompt(prompt, max_tokens, floor, actor)
        return result_of(pending, set(stored)), block

    # -- shutdown ----------------------------------------------------------------------------
    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until every queued event is stored and every scheduled summary written."""
        deadline = self._clock().timestamp() + timeout
        while self._clock().timestamp() < deadline:
            with self._lock:
                idle = not (self._queue or self._to_summarize or self._summarizing)
                if idle and self._queued_events == 0:
                    return True
            threading.Event().wait(0.02)
        return False

    def stop(self) -> None:
        """Store what is queued, then stop the threads."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            self._queued.notify_all()
        for thread in (self._writer, self._summarizer):
            if thread is not None:
                thread.join(timeout=30)
        self._writer = self._summarizer = None


def _summary_meta(summary: SessionSummary) -> dict[str, Any]:
    return {
        "title": summary.title,
        "files": summary.files,
        "commands": summary.commands,
        "failures": summary.failures,
        "next_steps": summary.next_steps,
        "open_questions": summary.open_questions,
        "outcome": summary.outcome,
    }


__all__ = [
    "DEFAULT_CONTEXT_TOKENS",
    "DEFAULT_RECALL_TOKENS",
    "MAX_CONTEXT_TOKENS",
    "MAX_EVENTS_PER_REQUEST",
    "Answer",
    "CaptureService",
    "IngestResult",
]
