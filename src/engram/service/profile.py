"""The cross-project profile: the user's habits that hold across projects (package manager,
test layout, style, tools), held at the user level, in no environment.

Learned only from preference wording in the user's own prompts (``engram.capture.habits``),
never from tool output, and only for users who opted in (``set_learning``). A habit joins the
profile once said in two projects or stated as global ("… in all my projects"); one written by
hand is part of it at once. The profile comes last in precedence: the user's current
instruction > the repository's rules > project memory > profile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from pydantic import BaseModel, Field

from engram.accounts import Scope
from engram.actors import Actor
from engram.capture.habits import MAX_HABIT_CHARS, habit_key, habit_of
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound
from engram.ids import new_id
from engram.limits import text_problem
from engram.service.environments import require_scope
from engram.store import Store
from engram.store.profile import ProfileEntry
from engram.tokens import count_tokens

PROFILE_TOKENS = 300
"""The most a session-start block gives the profile."""
BLOCK_START = "<!-- engram:profile:start -->"
BLOCK_END = "<!-- engram:profile:end -->"
HEADER = (
    "The user's habits across projects (from Engram's profile; lower precedence than the "
    "user's current instruction, this repository's rules and its project memory):"
)


class ProfileStatus(BaseModel):
    learning: bool = Field(description="Whether habits are learned from your prompts (opt-in)")
    habits: int = Field(description="Habits in the profile")
    candidates: int = Field(description="Habits seen in one project so far (not yet in it)")


class Habit(BaseModel):
    """One entry of the cross-project profile, as every edge shows it."""

    id: str
    text: str
    promoted: bool = Field(description="In the profile (else a candidate seen in one project)")
    stated_global: bool = Field(description="Stated as holding everywhere, or written by hand")
    projects: list[str] = Field(description="The environment ids where it was said")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, entry: ProfileEntry) -> Habit:
        return cls(
            id=entry.id,
            text=entry.text,
            promoted=entry.promoted,
            stated_global=entry.stated_global,
            projects=list(entry.projects),
            created_at=entry.created_at,
            updated_at=entry.updated_at,
        )


class ProfileService:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    # -- opt-in ------------------------------------------------------------------------------
    def set_learning(self, actor: Actor, *, enabled: bool) -> ProfileStatus:
        require_scope(actor, Scope.WRITE)
        self._store.profile.set_learning(actor.user_id, enabled)
        return self._status(actor)

    def status(self, actor: Actor) -> ProfileStatus:
        require_scope(actor, Scope.READ)
        return self._status(actor)

    def _status(self, actor: Actor) -> ProfileStatus:
        entries = self._store.profile.list_entries(actor.user_id)
        promoted = sum(1 for e in entries if e.promoted)
        learning = self._store.profile.learning(actor.user_id)
        return ProfileStatus(learning=learning, habits=promoted, candidates=len(entries) - promoted)

    # -- learning ----------------------------------------------------------------------------
    def learn(self, owner: str, environment_id: str, sentences: Sequence[str]) -> int:
        """Record the habits among a session's prompt sentences for ``owner`` (nothing unless
        they opted in); returns how many were recorded or seen again."""
        if not sentences or not self._store.profile.learning(owner):
            return 0
        seen = 0
        for sentence in sentences:
            habit = habit_of(sentence)
            if habit is None:
                continue
            for _ in range(3):  # a concurrent session may add the same habit first
                try:
                    self._record(owner, environment_id, habit.text, habit.key, habit.stated_global)
                    break
                except Conflict:
                    continue
            seen += 1
        return seen

    def _record(self, owner: str, env_id: str, text: str, key: str, stated_global: bool) -> None:
        now = self._clock()
        old = self._store.profile.find_entry(owner, key)
        if old is None:
            entry = ProfileEntry(
                new_id("hab_"), owner, key, text, (env_id,), stated_global, now, now
            )
        elif env_id in old.projects and (old.stated_global or not stated_global):
            return  # nothing new
        else:
            projects = old.projects if env_id in old.projects else (*old.projects, env_id)
            entry = replace(
                old,
                projects=projects,
                stated_global=old.stated_global or stated_global,
                updated_at=now,
            )
        self._store.profile.put_entry(entry)

    # -- like memories -----------------------------------------------------------------------
    def list(self, actor: Actor, *, candidates: bool = False) -> list[ProfileEntry]:
        """The profile (with ``candidates``: also the habits seen in one project so far)."""
        require_scope(actor, Scope.READ)
        entries = self._store.profile.list_entries(actor.user_id)
        return entries if candidates else [e for e in entries if e.promoted]

    def get(self, entry_id: str, actor: Actor) -> ProfileEntry:
        require_scope(actor, Scope.READ)
        return self._own(actor, entry_id)

    def _own(self, actor: Actor, entry_id: str) -> ProfileEntry:
        """The actor's entry (another user's does not exist for them)."""
        entry = self._store.profile.get_entry(entry_id)
        if entry is None or entry.user_id != actor.user_id:
            raise NotFound(f"profile entry {entry_id!r} does not exist", entry=entry_id)
        return entry

    def add(self, text: str, actor: Actor) -> ProfileEntry:
        """A habit written by hand: part of the profile at once (as if stated as global)."""
        require_scope(actor, Scope.WRITE)
        text, key = _checked(text)
        if self._store.profile.find_entry(actor.user_id, key) is not None:
            raise Conflict(f"the profile already holds {text!r}", field="text")
        now = self._clock()
        entry = ProfileEntry(new_id("hab_"), actor.user_id, key, text, (), True, now, now)
        return self._put(entry)

    def _put(self, entry: ProfileEntry) -> ProfileEntry:
        """Store ``entry`` and return it as stored: scrubbed (the store's scrubber), so a
        reply never shows a secret the profile does not hold."""
        self._store.profile.put_entry(entry)
        return self._store.profile.get_entry(entry.id) or entry

    def edit(self, entry_id: str, text: str, actor: Actor) -> ProfileEntry:
        """New wording; an entry edited by hand is part of the profile."""
        require_scope(actor, Scope.WRITE)
        old = self._own(actor, entry_id)
        text, key = _checked(text)
        clash = self._store.profile.find_entry(actor.user_id, key)
        if clash is not None and clash.id != old.id:
            raise Conflict(f"the profile already holds {text!r} ({clash.id})", field="text")
        entry = replace(old, text=text, key=key, stated_global=True, updated_at=self._clock())
        return self._put(entry)

    def delete(self, entry_id: str, actor: Actor) -> ProfileEntry:
        require_scope(actor, Scope.WRITE)
        entry = self._own(actor, entry_id)
        self._store.profile.delete_entry(entry.id)
        return entry

    # -- delivery ----------------------------------------------------------------------------
    def digest(self, actor: Actor, max_tokens: int = PROFILE_TOKENS) -> str:
        """The profile as bullet lines, oldest first, at most ``max_tokens`` ('' when empty):
        the same bytes as long as the profile did not change."""
        lines: list[str] = []
        used = 0
        for entry in self.list(actor):
            line = f"- {entry.text}"
            cost = count_tokens(line) + 1
            if used + cost > max_tokens:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines)

    def block(self, actor: Actor) -> str:
        """The delimited block ``engram profile apply`` writes into AGENTS.md and its kin."""
        body = self.digest(actor, max_tokens=2000) or "- (no habits yet)"
        title = "## Habits across projects (Engram profile)"
        return f"{BLOCK_START}\n{title}\n\n{HEADER}\n\n{body}\n{BLOCK_END}\n"


def _checked(text: str) -> tuple[str, str]:
    text = " ".join(text.split())
    if not text:
        raise InvalidInput("the habit is empty", field="text")
    if len(text) > MAX_HABIT_CHARS:
        raise InvalidInput(f"a habit is at most {MAX_HABIT_CHARS} characters", field="text")
    if problem := text_problem(text):
        raise InvalidInput(problem, field="text")
    key = habit_key(text)
    if not key:
        raise InvalidInput("the habit has no words", field="text")
    return text, key


def with_block(document: str, block: str) -> str:
    """``document`` with the profile block in place of the old one, else appended."""
    start, end = document.find(BLOCK_START), document.find(BLOCK_END)
    if start != -1 and end > start:
        return document[:start] + block.rstrip("\n") + document[end + len(BLOCK_END) :]
    if not document or document.endswith("\n\n"):
        return document + block
    return document + ("\n" if document.endswith("\n") else "\n\n") + block
