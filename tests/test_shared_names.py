"""An environment shared with you can be read by its bare name, but never stands in for one of
your own: a project, an import's environment column and a write by a bare name never reach
another user's environment of that name."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.accounts import Role
from engram.actors import Actor
from engram.errors import InvalidInput
from engram.models import MemoryFilter
from tests.conftest import FakeClock
from tests.test_capture_service import ev


@pytest.fixture
def world(engram: Engram) -> tuple[Actor, Actor, str]:
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    shared = engram.environments.create("webapp", bob)
    engram.environments.share(shared.id, alice.user_id, Role.WRITER, bob)
    return alice, bob, shared.id


def _in(engram: Engram, env_id: str) -> list[str]:
    return [
        m.content
        for m in engram.store.list_memories(MemoryFilter(environment_ids=[env_id]), limit=100)
    ]


def test_a_bare_shared_name_reads_but_does_not_write(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    alice, bob, shared = world
    engram.memories.add(NewMemory(content="Bob's deploy notes"), bob, shared)
    found = engram.search.search("deploy notes", alice, environment="webapp", count_access=False)
    assert [i.memory.content for i in found.items] == ["Bob's deploy notes"]
    with pytest.raises(InvalidInput, match="bob/webapp"):
        engram.memories.add(NewMemory(content="Alice private fact"), alice, "webapp")
    engram.memories.add(NewMemory(content="Alice adds on purpose"), alice, "bob/webapp")
    assert sorted(_in(engram, shared)) == ["Alice adds on purpose", "Bob's deploy notes"]


def test_a_project_and_an_import_column_make_the_actors_own_environment(
    engram: Engram, world: tuple[Actor, Actor, str], clock: FakeClock, tmp_path: Path
) -> None:
    """Before, Alice's hooks in her own repo named webapp captured into Bob's environment, and
    a CSV row for 'webapp' was stored there, creating nothing."""
    alice, _bob, shared = world
    engram.capture.ingest([ev("prompt", clock, project="webapp")], alice)
    (session,) = engram.capture.list_sessions(alice, "webapp")
    own = engram.store.find_environment(alice.user_id, "webapp")
    assert own is not None and own.id != shared and session.environment_id == own.id
    csv = tmp_path / "envcol.csv"
    csv.write_text("content,environment\nAlice private fact,webapp\n")
    bundle = engram.imports.read(csv)
    report = engram.imports.commit(bundle, alice)
    assert _in(engram, own.id) == ["Alice private fact"] and _in(engram, shared) == []
    assert report.environments_created == []  # her own existed by then (the capture)


def test_a_preview_names_the_own_project_environment_a_shared_one_does_not_stand_for(
    engram: Engram, world: tuple[Actor, Actor, str], tmp_path: Path
) -> None:
    alice, _bob, _shared = world
    csv = tmp_path / "m.csv"
    csv.write_text("content\nA fact\n")
    in_project = Actor(alice.user_id, "cli", project="webapp")
    preview = engram.imports.preview(engram.imports.read(csv), in_project)
    assert preview.new_environments == ["webapp"]
    assert engram.store.find_environment(alice.user_id, "webapp") is None
