from __future__ import annotations

import pytest

from engram import LOCAL, Conflict, Engram, InvalidInput, MemoryFilter, NewMemory, NotFound


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
