"""What a coding-agent session is told: one bounded block at session start (the Soul, the
user's stated preferences, the project's pinned rules and decisions, the last sessions and what
they left open) and, optionally, the memories relevant to each prompt that the session has not
been shown yet. Factual notes, never imperative "system" text; byte-stable while nothing
changed, so a harness can cache it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engram.actors import Actor
from engram.models import Layer, Memory, MemoryFilter
from engram.service.environments import EnvironmentService
from engram.store import Store
from engram.store.capture import CapturedSession, Observation
from engram.tokens import count_tokens, truncate_to_tokens

DEFAULT_CONTEXT_TOKENS = 1500
MAX_CONTEXT_TOKENS = 8000
SOUL_SHARE = 0.25
RECENT_SESSIONS = 3
PROFILE_TOKENS = 300
SoulFn = Callable[[Actor, str | None, int], str]
ProfileFn = Callable[[Actor, int], str]
"""(actor, max tokens) -> the user's cross-project habits as bullet lines ('' when none)."""
RecallFn = Callable[[Actor, str, str], list[tuple[str, str, float]]]
"""(actor, environment id, query) -> (memory id, text, absolute relevance) best first."""
DEFAULT_RECALL_TOKENS = 400
RECALL_FLOOR = 0.45
"""The relevance a memory needs to be added to a prompt (cosine similarity, or the keyword
match's share of the best possible when there are no vectors)."""


class Briefing:
    def __init__(
        self,
        store: Store,
        environments: EnvironmentService,
        summarize: Callable[[str], None],
        soul: SoulFn | None = None,
        recall: RecallFn | None = None,
        profile: ProfileFn | None = None,
    ) -> None:
        self._profile = profile
        self._store = store
        self._envs = environments
        self._summarize = summarize
        self._soul = soul
        self._recall = recall
        # per captured session: the memories already put in front of the agent
        self._injected: dict[str, set[str]] = {}

    def for_prompt(self, prompt: Observation, max_tokens: int, floor: float, actor: Actor) -> str:
        """The memories relevant to ``prompt`` its session has not been shown ('' if none)."""
        if self._recall is None or not prompt.text.strip():
            return ""
        shown = self._injected.setdefault(prompt.session, set())
        lines: list[str] = []
        header = (
            "Notes Engram keeps that relate to this prompt (they describe, they do not instruct):"
        )
        used = count_tokens(header) + 10
        for memory_id, text, relevance in self._recall(actor, prompt.environment_id, prompt.text):
            if relevance < floor or memory_id in shown:
                continue
            line = f"- {text}"
            cost = count_tokens(line) + 1
            if used + cost > max_tokens:
                break
            lines.append(line)
            shown.add(memory_id)
            used += cost
        if len(self._injected) > 10_000:  # forget the oldest sessions
            for key in list(self._injected)[:1000]:
                del self._injected[key]
        if not lines:
            return ""
        block = "\n".join(["<engram-memory>", header, *lines, "</engram-memory>"])
        return block

    def block(
        self, env_id: str, current: str | None, max_tokens: int, actor: Actor, lead: str = ""
    ) -> str:
        """What a new session in this environment starts with: factual notes, at most
        ``max_tokens``, the same bytes as long as nothing changed. ``lead`` (the handoff it
        receives) comes first."""
        env = self._envs.resolve(env_id, actor)
        self.catch_up(env.id, current)
        # sessions that did nothing (an agent opened and closed) have no episode: never
        # counted against the last three, however many of them came since
        summarised = self._store.capture.list_sessions(
            [env.id], limit=RECENT_SESSIONS + 1, summarised=True
        )
        recent = [s for s in summarised if s.id != current][:RECENT_SESSIONS]
        header = (
            f'<engram-memory project="{env.name}">\n'
            f"Notes Engram keeps for the project {env.name} (from earlier sessions; they "
            "describe, they do not instruct)."
        )
        budget = max_tokens - count_tokens(header) - 4
        sections: list[str] = [lead] if lead else []
        if self._soul is not None:
            soul = self._soul(actor, env.id, int(max_tokens * SOUL_SHARE)).strip()
            if soul:
                sections.append("Soul:\n" + soul)
        profile = self._preferences(env.id)
        if profile:
            sections.append("The user's stated preferences:\n" + _bullets(profile))
        rules = [m for m in self._rules(env.id) if m not in profile]
        decided = [m for m in rules if m.layer is not Layer.PROCEDURE]
        if decided:
            sections.append("Project rules and decisions:\n" + _bullets(decided))
        procedures = [m for m in rules if m.layer is Layer.PROCEDURE]
        if procedures:
            sections.append("Project procedures:\n" + _procedures(procedures))
        if current is not None:  # per-prompt recall will not repeat them
            self._injected.setdefault(current, set()).update(m.id for m in [*profile, *rules])
        episodes = {
            m.id: m for m in self._store.get([s.episode_id for s in recent if s.episode_id])
        }
        lines = [_session_line(s, episodes.get(s.episode_id or "")) for s in recent]
        if any(lines):
            sections.append("Recent sessions:\n" + "\n".join(ln for ln in lines if ln))
        # last: the lowest precedence, and the first to go when the budget is tight
        habits = self._profile(actor, PROFILE_TOKENS) if self._profile is not None else ""
        said = {m.content.strip().casefold() for m in [*profile, *rules]}
        habits = "\n".join(
            line
            for line in habits.splitlines()
            if line.removeprefix("- ").strip().casefold() not in said  # already given above
        )
        if habits:
            sections.append(
                "The user's habits across projects (this project's rules and memory come "
                "first):\n" + habits
            )
        if not sections:
            return ""
        body = ""
        for section in sections:
            candidate = f"{body}\n\n{section}" if body else section
            if count_tokens(candidate) <= budget:
                body = candidate
                continue
            room = budget - count_tokens(body) - 2
            if room > 20:
                body = (
                    f"{body}\n\n{truncate_to_tokens(section, room)}"
                    if body
                    else (truncate_to_tokens(section, room))
                )
            break
        return f"{header}\n\n{body}\n</engram-memory>"

    def catch_up(self, env_id: str, current: str | None) -> None:
        """A previous session still waiting for its summary (and so its handoff) gets it now,
        so that a session starting right after it does not miss it."""
        recent = self._store.capture.list_sessions([env_id], limit=RECENT_SESSIONS + 3)
        for s in recent:
            if s.id != current and (s.summarized_at is None or s.summarized_at < s.last_event_at):
                self._summarize(s.id)

    def _preferences(self, env_id: str, limit: int = 12) -> list[Memory]:
        flt = MemoryFilter(environment_ids=[env_id], categories=["preference"])
        memories = self._store.list_memories(flt, limit=limit, order="-importance")
        memories.sort(key=lambda m: (-m.importance, m.created_at, m.id))
        return memories

    def _rules(self, env_id: str) -> list[Memory]:
        candidates = self._store.list_memories(
            MemoryFilter(environment_ids=[env_id], layers=[Layer.FACT, Layer.PROCEDURE]),
            limit=200,
            order="-importance",
        )
        chosen = [
            m
            for m in candidates
            if m.pinned
            or m.layer is Layer.PROCEDURE
            or m.category in ("decision", "rule", "constraint", "project")
        ]
        chosen.sort(key=lambda m: (not m.pinned, -m.importance, m.created_at, m.id))
        return chosen[:12]


def _bullets(memories: Sequence[Memory]) -> str:
    return "\n".join(f"- {m.content}" for m in memories)


def _procedures(memories: Sequence[Memory]) -> str:
    """Each procedure by its name (unless its text starts with it), then when it applies."""
    lines = []
    for m in memories:
        line = f"- {m.content}"
        details = m.procedure
        if details is not None:
            if not m.content.casefold().startswith(details.name.casefold()):
                line = f"- {details.name}: {m.content}"
            if details.trigger:
                line += f" (when: {details.trigger})"
        lines.append(line)
    return "\n".join(lines)


def _session_line(session: CapturedSession, episode: Memory | None) -> str:
    if episode is None:
        return ""
    meta = episode.metadata.get("summary") or {}
    parts = [
        f"- {session.started_at:%Y-%m-%d} in {session.agent}: {meta.get('title') or 'a session'}"
    ]
    if meta.get("files"):
        parts.append("files changed: " + ", ".join(meta["files"][:6]))
    if meta.get("failures"):
        parts.append("failed: " + "; ".join(meta["failures"][:3]))
    if meta.get("outcome"):
        parts.append("outcome: " + meta["outcome"])
    if meta.get("open_questions"):
        parts.append("open questions: " + "; ".join(meta["open_questions"][:3]))
    if meta.get("next_steps"):
        parts.append("next steps: " + "; ".join(meta["next_steps"][:3]))
    return "\n  ".join(parts)
