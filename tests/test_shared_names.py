"""An environment shared with you can be read by its bare name, but never stands in for one of
your own: a project, an import's environment column and a write by a bare name never reach
another user's environment of that name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.accounts import Role
from engram.actors import Actor
from engram.errors import InvalidInput, NotFound, PermissionDenied
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


def test_no_spelling_of_a_bare_name_writes_to_a_shared_one(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    """'/webapp' names no owner: a bare name, refused for a write as 'webapp' is (before, it
    wrote to Bob's). A reader hears that they are one, not a way to name it that also fails."""
    alice, bob, shared = world
    with pytest.raises(InvalidInput, match="bob/webapp"):
        engram.memories.add(NewMemory(content="typo-ish write"), alice, "/webapp")
    rita = Actor(engram.accounts.create_user("rita", LOCAL).id, "api")
    engram.environments.share(shared, rita.user_id, Role.READER, bob)
    with pytest.raises(PermissionDenied, match="reader"):
        engram.memories.add(NewMemory(content="x"), rita, "webapp")


def test_an_import_column_may_name_a_shared_environment_as_owner_slash_name(
    engram: Engram, world: tuple[Actor, Actor, str], tmp_path: Path
) -> None:
    """Before, 'bob/webapp' in an environment column was taken for a new environment of
    Alice's: the preview listed it as new and the commit failed on the name."""
    alice, _bob, shared = world
    csv = tmp_path / "m.csv"
    csv.write_text("content,environment\nA fact for Bob,bob/webapp\n")
    bundle = engram.imports.read(csv)
    assert engram.imports.preview(bundle, alice).new_environments == []
    engram.imports.commit(bundle, alice)
    assert _in(engram, shared) == ["A fact for Bob"]


def test_mcp_stdio_on_a_bare_shared_name_reads_there_and_refuses_writes(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    """ENGRAM_ENV=webapp for `engram mcp`: before, the server bound Bob's id and every
    `remember` landed in Bob's environment, which the CLI and REST refuse."""
    from engram.mcp.stdio import choose_environment

    alice, _bob, shared = world
    _, bound = choose_environment(engram, alice, "webapp", None)
    assert engram.environments.resolve(bound, alice).id == shared  # reads there
    with pytest.raises(InvalidInput, match="bob/webapp"):
        engram.memories.add(NewMemory(content="Alice private"), alice, bound)
    _, named = choose_environment(engram, alice, "bob/webapp", None)
    assert named == shared


def test_cli_env_use_keeps_owner_slash_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `engram env use bob/webapp` kept 'webapp': every later `engram add` was
    refused ('name it bob/webapp'), and with an own 'webapp' it silently chose that one."""
    from engram.cli import main
    from engram.config import Settings

    home = tmp_path / "h"
    assert main(["--home", str(home), "init"]) == 0
    engram = Engram.open(Settings.load(home))
    try:
        bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
        env = engram.environments.create("webapp", bob)
        engram.environments.share(env.id, LOCAL.user_id, Role.WRITER, bob)
    finally:
        engram.close()
    assert main(["--home", str(home), "env", "use", "bob/webapp"]) == 0
    assert "now using bob/webapp" in capsys.readouterr().out
    assert main(["--home", str(home), "add", "A fact for Bob's webapp", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["environment_id"] == env.id


def test_a_team_project_is_named_owner_slash_name(
    engram: Engram, world: tuple[Actor, Actor, str], clock: FakeClock
) -> None:
    """A team's repository pins the shared environment (.engram.toml name = "bob/webapp",
    sent as the project): hooks, MCP and REST in it work there, and a project naming
    someone else's environment that does not exist is not created (walkthrough 34: the name
    the errors recommend was refused as a project)."""
    alice, _bob, shared = world
    team = Actor(alice.user_id, "api", project="bob/webapp")
    engram.capture.ingest([ev("prompt", clock, project="bob/webapp")], alice)
    (session,) = engram.capture.list_sessions(alice, "bob/webapp")
    assert session.environment_id == shared
    engram.memories.add(NewMemory(content="Team decision"), team)
    assert "Team decision" in _in(engram, shared)
    assert engram.store.find_environment(alice.user_id, "webapp") is None
    with pytest.raises(NotFound):
        engram.memories.add(NewMemory(content="x"), Actor(alice.user_id, "api", project="bob/x"))
    assert engram.environments.project_to_create(None, team) is None


def test_the_project_header_takes_owner_slash_name(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    import httpx

    from engram.accounts import Scope
    from engram.api import ServerSettings, create_app
    from engram.capture.which import PROJECT_HEADER
    from tests.live_server import running

    alice, _bob, shared = world
    token = engram.accounts.issue_key(
        LOCAL, "alice", [Scope.READ, Scope.WRITE], user_id=alice.user_id
    ).token
    auth = {"Authorization": f"Bearer {token}", PROJECT_HEADER: "bob/webapp"}
    with running(lambda port: create_app(engram, ServerSettings(port=port))) as url:
        made = httpx.post(f"{url}/api/v1/facts", headers=auth, json={"content": "Via REST"})
        assert made.status_code in (200, 201), made.text
        assert made.json()["environment_id"] == shared
        bad = httpx.get(f"{url}/api/v1/facts", headers={**auth, PROJECT_HEADER: "a b/webapp"})
        assert bad.status_code == 422


def test_a_session_in_an_own_project_shadowing_a_shared_one_is_told(
    engram: Engram, world: tuple[Actor, Actor, str], clock: FakeClock
) -> None:
    """Alice's repository is named webapp, as Bob's shared environment is: her sessions work
    in her own webapp (never Bob's by a bare name), and their brief says so, with the line
    that would put them in the team's (walkthrough 34: the team's memory split unnoticed)."""
    alice, _bob, _shared = world
    _, block = engram.capture.session_start([ev("session_start", clock, project="webapp")], alice)
    assert "bob/webapp is shared with you under that name" in block
    assert '[environment] name = "bob/webapp"' in block
    team = [ev("session_start", clock, session="s-2", project="bob/webapp")]
    assert "shared with you under that name" not in engram.capture.session_start(team, alice)[1]


def test_members_are_named_by_user_name_or_id(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    """Walkthrough 34: PUT /environments/shop/members/bob answered "user 'bob' does not
    exist" (only an id was taken) though the CLI takes names; removing the owner said they
    were 'not a member'."""
    alice, bob, shared = world
    engram.accounts.create_user("carol", LOCAL)
    member = engram.environments.share(shared, "carol", Role.READER, bob)
    assert engram.accounts.find_user("carol", LOCAL).id == member.user_id
    assert engram.environments.unshare(shared, "carol", bob).user_id == member.user_id
    with pytest.raises(InvalidInput, match="'bob' owns 'webapp': an owner cannot be removed"):
        engram.environments.unshare(shared, "bob", bob)
    with pytest.raises(NotFound, match="user 'nobody' does not exist"):
        engram.environments.share(shared, "nobody", Role.READER, bob)
    assert alice.user_id in {m.user_id for m in engram.environments.members(shared, bob)}


@pytest.mark.anyio
async def test_mcp_lists_how_to_name_each_environment_to_write_to_it(
    engram: Engram, world: tuple[Actor, Actor, str]
) -> None:
    """An agent told "name it 'bob/webapp'" had nowhere to read that name: list_environments
    gave owners as ids only. Now it maps each environment to the name that writes there."""
    from mcp import Client as McpClient

    from engram.mcp import Binding, build_server

    alice, _bob, shared = world
    own = engram.environments.create("notes", alice)
    async with McpClient(build_server(Binding(engram, alice)), mode="auto") as c:
        listed = await c.call_tool("list_environments", {})
        assert listed.structured_content is not None
        names = listed.structured_content["names"]
        assert names[shared] == "bob/webapp" and names[own.id] == "notes"
        stored = await c.call_tool(
            "remember", {"content": "Alice adds via MCP", "environment": names[shared]}
        )
        assert not stored.is_error
    assert "Alice adds via MCP" in _in(engram, shared)
