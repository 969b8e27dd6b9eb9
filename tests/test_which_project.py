"""One rule for "which project" (engram.capture.which), applied alike by the CLI, stdio and HTTP
MCP, REST, the SDK and the hooks: --env → ENGRAM_ENV → the working directory's project (its
.engram.toml, else its git root) → the default.

The reported bug: in a git repository, memories stored through stdio MCP went into the
repository's environment while ``engram list``/``engram search`` there and HTTP MCP used
``default`` — the memories seemed to vanish."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram import Engram
from engram.accounts import Scope
from engram.actors import LOCAL, Actor
from engram.capture.repo import RepoRulesError
from engram.capture.which import PROJECT_HEADER, which_environment
from engram.cli import main
from engram.errors import NotFound
from engram.sdk import Client as SdkClient
from tests.mcp_scenario import text_of
from tests.test_mcp_transports import engram_env, running_server, stdio


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "src").mkdir()
    return path


def cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> str:
    capsys.readouterr()
    assert main(["--home", str(home), *args]) == 0
    return capsys.readouterr().out


# -- the rule ------------------------------------------------------------------------------------
def test_the_rule_in_order(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "My Shop")
    inside = repo / "src"
    assert which_environment("given", {"ENGRAM_ENV": "var"}, inside).explicit == "given"
    chosen = which_environment(None, {"ENGRAM_ENV": "var"}, inside)
    assert (chosen.ref, chosen.source, chosen.project) == ("var", "ENGRAM_ENV", None)
    chosen = which_environment(None, {}, inside)
    assert (chosen.project, chosen.source, chosen.root) == ("my-shop", "git", repo)
    (repo / ".engram.toml").write_text('[environment]\nname = "shop"\n')
    assert which_environment(None, {}, inside).project == "shop"
    (repo / ".engram.toml").write_text('[environment]\nid = "env_0123"\n')
    chosen = which_environment(None, {}, inside)
    assert (chosen.ref, chosen.source) == ("env_0123", ".engram.toml")
    outside = tmp_path / "loose"
    outside.mkdir()
    chosen = which_environment(None, {}, outside)
    assert (chosen.ref, chosen.source) == (None, "default")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('environment = "x"', "[environment] must be a table"),
        ('[environment]\nname = "a"\nid = "env_1"', "not both"),
        ("[environment]\nname = 3", "environment.name must be a string"),
        ('[environment]\nid = "shop"', "environment.id must be an id"),
        ('[environment]\nnmae = "shop"', "environment.nmae is not a setting"),
    ],
)
def test_a_bad_engram_toml_is_named(tmp_path: Path, text: str, problem: str) -> None:
    repo = git_repo(tmp_path / "r")
    (repo / ".engram.toml").write_text(text)
    with pytest.raises(RepoRulesError, match=re.escape(problem)):
        which_environment(None, {}, repo)


def test_a_project_is_created_on_first_use_and_an_explicit_name_wins(engram: Engram) -> None:
    actor = Actor(LOCAL.user_id, "api", project="webapp")
    env = engram.environments.resolve(None, actor)
    assert env.name == "webapp"
    assert engram.environments.resolve(None, actor).id == env.id  # created once
    assert engram.environments.resolve("default", actor).name == "default"
    reader = Actor(LOCAL.user_id, "api", scopes=frozenset({Scope.READ}), project="other")
    with pytest.raises(NotFound, match="'other' does not exist"):
        engram.environments.resolve(None, reader)  # a read-only key creates nothing
    assert sorted(e.name for e in engram.environments.list(LOCAL)) == ["default", "webapp"]


# -- the reported bug, end to end ----------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_memories_are_seen_by_the_cli_http_mcp_rest_and_sdk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    home = tmp_path / "home"
    cli(capsys, home, "init")
    repo = git_repo(tmp_path / "webshop")
    async with Client(stdio(home, repo / "src")) as c:  # type: ignore[arg-type]
        stored = await c.call_tool("remember", {"content": "Checkout uses the Stripe sandbox"})
    assert not stored.is_error, text_of(stored)

    # the CLI in the same directory (a subdirectory of the repository, too)
    monkeypatch.chdir(repo / "src")
    listed = json.loads(cli(capsys, home, "list", "--json"))
    assert [m["content"] for m in listed["items"]] == ["Checkout uses the Stripe sandbox"]
    found = json.loads(cli(capsys, home, "search", "stripe sandbox", "--json"))
    assert found["items"] and "Stripe sandbox" in found["items"][0]["memory"]["content"]
    which = json.loads(cli(capsys, home, "env", "which", "--json"))
    assert which == {"environment": "webshop", "source": "git", "root": str(repo)}
    # an explicit --env still wins
    assert json.loads(cli(capsys, home, "list", "--env", "default", "--json"))["items"] == []

    token = (home / "token").read_text().strip()
    auth = {"Authorization": f"Bearer {token}"}
    with running_server(home) as url:
        # HTTP MCP with the project header, and without it (the default environment)
        for headers, expected in (({PROJECT_HEADER: "webshop"}, True), ({}, False)):
            async with httpx2.AsyncClient(headers={**auth, **headers}, timeout=30) as http:
                transport = streamable_http_client(url + "/mcp", http_client=http)
                async with Client(transport) as c:  # type: ignore[arg-type]
                    recent = await c.call_tool("list_recent", {})
            assert recent.structured_content is not None
            contents = [m["content"] for m in recent.structured_content["items"]]
            assert ("Checkout uses the Stripe sandbox" in contents) is expected
        # a malformed header is refused with a message naming it
        bad = httpx.post(url + "/mcp", headers={**auth, PROJECT_HEADER: "No Spaces"}, json={})
        assert bad.status_code == 400 and PROJECT_HEADER in bad.text
        # REST, with the header
        page = httpx.get(url + "/api/v1/facts", headers={**auth, PROJECT_HEADER: "webshop"}).json()
        assert [m["content"] for m in page["items"]] == ["Checkout uses the Stripe sandbox"]
        assert httpx.get(url + "/api/v1/facts", headers=auth).json()["items"] == []
        # the SDK, run in the repository, says which project it is in
        with SdkClient(url, token) as sdk:
            assert [m.content for m in sdk.facts.list().items] == [
                "Checkout uses the Stripe sandbox"
            ]
        with SdkClient(url, token, project="") as sdk:
            assert sdk.facts.list().items == []


def test_mcp_refuses_a_home_that_does_not_exist(tmp_path: Path) -> None:
    home = tmp_path / "no-such-home"
    done = subprocess.run(
        [sys.executable, "-m", "engram", "mcp"],
        env=engram_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3 and done.stdout == ""  # 3: not found
    assert f"the Engram home {home} does not exist" in done.stderr
    assert not home.exists()


def test_mcp_config_http_sends_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = git_repo(tmp_path / "webshop")
    monkeypatch.chdir(repo)
    home = tmp_path / "home"
    out = cli(capsys, home, "mcp-config", "cursor", "--http")
    entry = json.loads(out)["mcpServers"]["engram"]
    assert entry["headers"][PROJECT_HEADER] == "webshop"
    assert "X-Engram-Project: webshop" in cli(capsys, home, "mcp-config", "claude-code", "--http")
    assert 'http_headers = { "X-Engram-Project" = "webshop" }' in cli(
        capsys, home, "mcp-config", "codex", "--http"
    )
