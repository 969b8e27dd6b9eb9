from __future__ import annotations

import dataclasses

import pytest

from engram import (
    LOCAL,
    Conflict,
    Engram,
    InvalidInput,
    MemoryFilter,
    NewMemory,
    NotFound,
    PermissionDenied,
)
from engram.accounts import Role
from engram.actors import Actor


def test_default_environment_exists_once(engram: Engram) -> None:
    a = engram.environments.ensure_default(LOCAL)
    b = engram.environments.resolve(None, LOCAL)
    assert a == b and a.name == "default"
    assert [e.name for e in engram.environments.list(LOCAL)] == ["default"]


def test_memories_are_isolated_per_environment(engram: Engram) -> None:
    engram.environments.create("alpha", LOCAL)
    engram.environments.create("beta", LOCAL)
    a = engram.memories.add(NewMemory(content="alpha uses postgres"), LOCAL, "alpha")
    b = engram.memories.add(NewMemory(content="beta uses postgres too"), LOCAL, "beta")

    alpha = engram.memories.list_memories(LOCAL, environment="alpha")
    beta = engram.memories.list_memories(LOCAL, environment="beta")
    default = engram.memories.list_memories(LOCAL)
    assert [m.id for m in alpha.items] == [a.id]
    assert [m.id for m in beta.items] == [b.id]
    assert default.total == 0
    # keyword search honours the environment filter
    env_a = engram.environments.resolve("alpha", LOCAL)
    hits = engram.store.keyword_search(
        "postgres", MemoryFilter(environment_ids=[env_a.id]), limit=10
    )
    assert [h.memory_id for h in hits] == [a.id]
    # an id works wherever a name does
    assert engram.memories.list_memories(LOCAL, environment=env_a.id).total == 1


def test_environment_names_are_validated_and_unique(engram: Engram) -> None:
    engram.environments.create("Proj-1", LOCAL)  # names are lowercased
    with pytest.raises(Conflict, match="already exists"):
        engram.environments.create("proj-1", LOCAL)
    with pytest.raises(InvalidInput, match="environment name"):
        engram.environments.create("has space", LOCAL)
    with pytest.raises(NotFound, match="'nope' does not exist"):
        engram.memories.add(NewMemory(content="x"), LOCAL, "nope")


def test_delete_environment_refuses_when_not_empty(engram: Engram) -> None:
    engram.environments.create("tmp", LOCAL)
    m = engram.memories.add(NewMemory(content="scratch"), LOCAL, "tmp")
    engram.memories.delete(m.id, LOCAL)  # even deleted memories are kept until purged
    with pytest.raises(Conflict, match="holds 1 memories"):
        engram.environments.delete("tmp", LOCAL)
    engram.environments.delete("tmp", LOCAL, purge=True)
    assert engram.store.get([m.id]) == []
    with pytest.raises(NotFound):
        engram.environments.resolve("tmp", LOCAL)


def test_a_shared_environment_is_found_by_its_name(engram: Engram) -> None:
    """The name a listing shows names a shared environment too; the caller's own comes first,
    ``owner/name`` or the id picks one of several (walkthrough 32, finding 12)."""
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    rita = Actor(engram.accounts.create_user("rita", LOCAL).id, "api")
    webapp = engram.environments.create("webapp", alice)
    engram.environments.share(webapp.id, rita.user_id, Role.READER, alice)
    fact = engram.memories.add(NewMemory(content="release on Fridays"), alice, "webapp")

    assert ("webapp", alice.user_id) in [(e.name, e.owner) for e in engram.environments.list(rita)]
    assert engram.environments.resolve("webapp", rita) == webapp
    listed = engram.memories.list_memories(rita, environment="webapp").items
    assert [m.id for m in listed] == [fact.id]
    with pytest.raises(PermissionDenied, match="you are a reader of environment 'webapp'"):
        engram.memories.add(NewMemory(content="x"), rita, "webapp")

    # a second 'webapp' shared with rita: the bare name is ambiguous, and the error says how
    # to name each; owner/name (user name or id) and the id pick one
    other = engram.environments.create("webapp", bob)
    engram.environments.share(other.id, rita.user_id, Role.WRITER, bob)
    with pytest.raises(InvalidInput) as ambiguous:
        engram.environments.resolve("webapp", rita)
    message = str(ambiguous.value)
    assert "2 environments named 'webapp' are shared with you" in message
    assert f"alice/webapp ({webapp.id})" in message and f"bob/webapp ({other.id})" in message
    assert engram.environments.resolve("alice/webapp", rita) == webapp
    assert engram.environments.resolve("Bob/WebApp", rita) == other
    assert engram.environments.resolve(f"{bob.user_id}/webapp", rita) == other
    assert engram.environments.resolve(other.id, rita) == other
    with pytest.raises(NotFound, match="'carol/webapp' does not exist"):
        engram.environments.resolve("carol/webapp", rita)

    # a project is the caller's own: working in 'webapp' creates her own, shared ones or not
    in_project = dataclasses.replace(rita, project="webapp")
    own = engram.environments.resolve(None, in_project, Role.WRITER)
    assert own.owner == rita.user_id and own.name == "webapp"
    # her own 'webapp' comes first, by its name; the shared ones stay reachable
    assert engram.environments.resolve("webapp", rita) == own
    assert engram.environments.resolve("rita/webapp", rita) == own
    assert engram.environments.resolve("alice/webapp", rita) == webapp
    # an environment that is not shared with her is not found by its owner's name for it
    engram.environments.create("private", alice)
    with pytest.raises(NotFound, match="'alice/private' does not exist"):
        engram.environments.resolve("alice/private", rita)
    with pytest.raises(NotFound, match="'private' does not exist"):
        engram.environments.resolve("private", rita)
