"""The world the access matrix runs in: the rules that give each caller's expected status, the
callers (a user of each role holding keys of each scope), the shared and the stranger's
environments with their planted markers, and the shape of a REST case.

``tests/test_access_matrix.py`` holds the case tables and the tests over them.
"""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from engram import LOCAL, Engram
from engram.accounts import Role, Scope
from engram.actors import Actor
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.providers import ProviderSettings
from engram.ids import new_id
from engram.models import Layer, NewMemory, ProcedureDetails
from engram.service.extraction import ConversationInput
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord
from engram.store.reviews import ReviewItem
from tests.export_fixtures import chatgpt_conversation

STRANGER_MARK = "zebramarkerstranger"
"""Planted in every kind of record of an environment none of the callers may see, and in a
handoff the shared environment's proprietor left there (owned: its members never see it)."""
SHARED_MARK = "okapimarkershared"
"""Planted in the shared environment: visible to its members, to nobody else."""


class Rule(Enum):
    PUBLIC = "public"
    ANY = "any"
    ADMIN = "admin"
    OWN_READ = "own_read"
    OWN_WRITE = "own_write"
    ENV_READ = "env_read"
    ENV_WRITE = "env_write"
    ENV_OWNER = "env_owner"
    PROJECT_WRITE = "project_write"
    PROJECT_BRIEF = "project_brief"


NEED = {Rule.ENV_READ: Role.READER, Rule.ENV_WRITE: Role.WRITER, Rule.ENV_OWNER: Role.OWNER}


@dataclass(frozen=True)
class Caller:
    label: str
    user_id: str
    role: Role | None
    scopes: frozenset[Scope]
    admin: bool = False

    def can(self, scope: Scope) -> bool:
        return Scope.ADMIN in self.scopes or scope in self.scopes


def expected(rule: Rule, caller: Caller) -> int | None:
    """The error status the rules give ``caller``, or None when the call must succeed."""
    if rule in (Rule.PUBLIC, Rule.ANY):
        return None
    if rule is Rule.ADMIN:
        return None if caller.can(Scope.ADMIN) else 403
    if rule is Rule.OWN_READ:
        return None if caller.can(Scope.READ) else 403
    if rule is Rule.OWN_WRITE:
        return None if caller.can(Scope.WRITE) else 403
    if rule is Rule.PROJECT_BRIEF and not caller.can(Scope.READ):
        return 403  # checked first, before anything is stored: the answer holds memories
    if caller.role is None:
        return 404  # the environment does not exist for them, whatever the key
    scope = Scope.READ if rule is Rule.ENV_READ else Scope.WRITE
    if not caller.can(scope) or not caller.role.allows(NEED.get(rule, Role.WRITER)):
        return 403
    return None


# -- the world every call runs in --------------------------------------------------------------


@dataclass
class World:
    engram: Engram
    proprietor: Actor
    shared_env: str
    third_user: str
    preset: str
    stranger_env: str
    counter: itertools.count[int] = field(default_factory=itertools.count)

    def unique(self, prefix: str) -> str:
        return f"{prefix}-{next(self.counter)}"

    def memory(self, layer: Layer = Layer.FACT) -> str:
        """A fresh memory in the shared environment (so destructive calls never run out)."""
        text = f"{SHARED_MARK} {layer.value} {self.unique('m')}"
        new = NewMemory(
            layer=layer,
            content=text,
            procedure=ProcedureDetails(name="deploy") if layer is Layer.PROCEDURE else None,
        )
        return self.engram.memories.add(new, self.proprietor, self.shared_env).id

    def merged(self) -> str:
        """A merged record in the shared environment: something ``undo`` can undo."""
        text = f"{SHARED_MARK} the nightly build runs at two {self.unique('u')}"
        self.engram.lifecycle.remember(NewMemory(content=text), self.proprietor, self.shared_env)
        again = self.engram.lifecycle.remember(
            NewMemory(content=text), self.proprietor, self.shared_env
        )
        assert again.merged_record is not None
        return again.merged_record

    def review(self) -> str:
        item = ReviewItem(
            id=new_id("rev_"),
            environment_id=self.shared_env,
            memory_id=self.memory(),
            other_id=self.memory(),
            reason="unclear",
            created_at=datetime.now(UTC),
        )
        self.engram.store.reviews.put_review(item)
        return item.id

    def conversation(self) -> str:
        data = ConversationInput(
            conversation=NewConversation(id=self.unique("c")),
            messages=[NewMessage(role=Speaker.USER, content=f"{SHARED_MARK} I like tea.")],
        )
        result = self.engram.extraction.extract(data, self.proprietor, self.shared_env)
        assert result.conversation_id is not None
        return result.conversation_id

    def session(self) -> str:
        """A captured coding-agent session in the shared environment, with what it captured."""
        events = capture_events(
            self.shared_env, self.unique("s"), "prompt", "stop", mark=SHARED_MARK
        )
        result = self.engram.capture.ingest(events, self.proprietor)
        return result.sessions[0]

    def provider(self) -> str:
        """A fresh LLM provider (so removing one never runs out)."""
        name = self.unique("llm")
        self.engram.providers.set(name, ProviderSettings(model="m"), LOCAL)
        return name

    def handoff(self, caller: Caller) -> str:
        """An open handoff of the caller's own, in their default environment."""
        return self.engram.handoffs.begin(f"matrix {self.unique('h')}", self.own(caller)).id

    def foreign_env(self, caller: Caller) -> str:
        """The shared environment, or for a caller without a role there the stranger's: the
        capture cases above them leave such callers an environment *named* like the shared
        one's id, which a lookup by that id then finds (their own, rightly)."""
        return self.shared_env if caller.role is not None else self.stranger_env

    def events(self, *kinds: str) -> dict[str, Any]:
        """The body of a capture request whose events belong to the shared environment (with
        no marker: a caller without a role there stores them in an environment of their own)."""
        return {"events": capture_events(self.shared_env, self.unique("s"), *kinds)}

    def env_for(self, caller: Caller, *, with_member: bool = False) -> str:
        """A fresh environment of the proprietor where ``caller`` has their role."""
        env = self.engram.environments.create(self.unique("fresh"), self.proprietor)
        if caller.role is not None and caller.user_id != self.proprietor.user_id:
            self.engram.environments.share(env.id, caller.user_id, caller.role, self.proprietor)
        if with_member:
            self.engram.environments.share(env.id, self.third_user, Role.READER, self.proprietor)
        return env.id

    def own(self, caller: Caller) -> Actor:
        """The caller's user acting with every scope (to prepare their own Soul)."""
        return Actor(caller.user_id, "local")

    def snapshot(self, caller: Caller) -> str:
        return self.engram.soul.snapshot(self.own(caller)).id

    def habit(self, caller: Caller) -> str:
        return self.engram.profile.add(f"Always {self.unique('h')}", self.own(caller)).id

    def grant(self, caller: Caller) -> str:
        """A fresh OAuth grant of the caller's (as if they had signed a client in)."""
        client = self.unique("client")
        now = datetime.now(UTC)
        store = self.engram.store.oauth
        store.put_client(ClientRecord(client, json.dumps({"client_id": client}), now))
        grant = GrantRecord(
            self.unique("grt_"), caller.user_id, client, client, ("read",), "x", now
        )
        store.create_grant(grant, CodeRecord(self.unique("code"), grant.id, "c", "x", True, now))
        return grant.id

    def job(self, caller: Caller) -> str:
        """An import job of the caller's own (uploaded into their own default environment)."""
        data = json.dumps([chatgpt_conversation(self.unique("j"), "Tea", [("user", "tea")])])
        job = self.engram.import_jobs.upload(
            "c.json", io.BytesIO(data.encode()), Actor(caller.user_id, "local")
        )
        return job.id

    def account(self) -> str:
        """A fresh account that owns nothing (so deleting it needs no purge)."""
        return self.engram.accounts.create_user(self.unique("gone"), LOCAL).id

    def block(self, caller: Caller) -> str:
        for text in ("first", "second"):
            self.engram.soul.set_block("identity", self.own(caller), f"{text} {self.unique('b')}")
        return "identity"


def capture_events(project: str, session: str, *kinds: str, mark: str = "") -> list[dict[str, Any]]:
    """Wire events of one coding-agent session of ``project`` (an environment id); ``mark``
    begins its prompt."""
    return [
        {
            "agent": "claude",
            "kind": kind,
            "session_id": session,
            "cwd": "/src/app",
            "at": datetime.now(UTC).isoformat(),
            "key": f"{session}:{i}:{kind}",
            "project": project,
            "text": f"{mark} run the nightly build with tea".strip() if kind == "prompt" else "",
        }
        for i, kind in enumerate(kinds)
    ]


def plant_stranger(engram: Engram) -> str:
    """An environment nobody in the matrix may see, with the marker in every kind of record."""
    stranger = Actor(engram.accounts.create_user("stranger", LOCAL).id, "local")
    env = engram.environments.create(f"{STRANGER_MARK}-env", stranger).id
    for layer in Layer:
        engram.memories.add(
            NewMemory(
                layer=layer,
                content=f"{STRANGER_MARK} {layer.value} nightly build deploy tea",
                tags=[STRANGER_MARK],
                procedure=ProcedureDetails(name="deploy") if layer is Layer.PROCEDURE else None,
            ),
            stranger,
            env,
        )
    engram.lifecycle.remember(
        NewMemory(content=f"{STRANGER_MARK} builds run nightly"), stranger, env
    )
    engram.extraction.extract(
        ConversationInput(
            conversation=NewConversation(id="c-0"),
            messages=[NewMessage(role=Speaker.USER, content=f"{STRANGER_MARK} I like tea.")],
        ),
        stranger,
        env,
    )
    events = capture_events(env, "s-0", "session_start", "prompt", "stop", mark=STRANGER_MARK)
    session = engram.capture.ingest(events, stranger).sessions[0]
    engram.capture.summarize_session(session)  # its episode
    engram.handoffs.begin(f"{STRANGER_MARK} handoff", stranger, environment=env)
    engram.soul.set_block("identity", stranger, f"{STRANGER_MARK} persona")
    engram.soul.snapshot(stranger, label=STRANGER_MARK)
    return env


def build_world(engram: Engram) -> tuple[World, list[Caller], dict[str, str]]:
    """The shared environment, its members and their keys: (world, callers, token by label)."""
    proprietor = Actor(engram.accounts.create_user("proprietor", LOCAL).id, "local")
    shared = engram.environments.create("shared", proprietor).id
    third = engram.accounts.create_user("third", LOCAL).id
    stranger_env = plant_stranger(engram)
    world = World(engram, proprietor, shared, third, engram.soul.presets()[0].name, stranger_env)
    world.memory()
    world.session()
    # the proprietor's own handoff in the shared environment: no member may see it
    engram.handoffs.begin(f"{STRANGER_MARK} handoff", proprietor, environment=shared)
    callers, tokens = [], {}
    key_sets = {"r": [Scope.READ], "w": [Scope.WRITE], "rw": [Scope.READ, Scope.WRITE]}
    for role in (None, Role.READER, Role.WRITER, Role.OWNER):
        name = role.value if role else "none"
        user = engram.accounts.create_user(f"u-{name}", LOCAL).id
        engram.environments.ensure_default(Actor(user, "local"))
        if role is not None:
            engram.environments.share(shared, user, role, proprietor)
        for label, scopes in key_sets.items():
            issued = engram.accounts.issue_key(LOCAL, label, scopes, user_id=user)
            caller = Caller(f"{name}/{label}", user, role, frozenset(scopes))
            callers.append(caller)
            tokens[caller.label] = issued.token
    engram.environments.ensure_default(LOCAL)
    for label, scopes in {**key_sets, "admin": [Scope.ADMIN]}.items():
        issued = engram.accounts.issue_key(LOCAL, label, scopes)
        caller = Caller(f"admin/{label}", LOCAL.user_id, None, frozenset(scopes), admin=True)
        callers.append(caller)
        tokens[caller.label] = issued.token
    return world, callers, tokens


# -- the shape of a REST case ------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    token: str | None = None  # a fresh key of the caller's, when the call acts on the key itself


Build = Callable[[World, Caller], Call]


@dataclass(frozen=True)
class Case:
    rule: Rule
    build: Build
