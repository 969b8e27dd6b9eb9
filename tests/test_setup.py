"""engram setup against a fake HOME where every agent already holds another tool's MCP server
and hooks: the plan changes nothing, setup merges (other entries intact, a byte-identical
backup of each file), a second setup changes no byte, and uninstall gives every file back
byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from engram.cli import main
from engram.setup.agents import AgentId, detect
from tests.setup_fixtures import CODEX_TOML, JSON_FILES, backups, make_home, snapshot

ENGRAM = Path(sys.executable).parent / "engram"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    for name in (
        "XDG_CONFIG_HOME",
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "ENGRAM_TOKEN",
        "ENGRAM_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no agent on PATH: found by folders
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "engram"))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    return home


def run(*args: str) -> int:
    return main(["setup", *args])


def test_every_agent_is_found_by_its_folder(home: Path) -> None:
    assert detect({"HOME": str(home), "PATH": ""}) == {}
    make_home(home)
    assert set(detect({"HOME": str(home), "PATH": ""}, "linux")) == set(AgentId)


def test_setup_merges_a_second_run_changes_nothing_and_uninstall_restores_every_byte(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = make_home(home)

    assert run("--plan") == 0
    plan = capsys.readouterr().out
    assert snapshot(home) == before and backups(home) == []
    for title in ("Claude Code", "Codex", "Gemini CLI", "Cursor", "OpenCode", "VS Code"):
        assert title in plan
    assert "change ~/.claude.json" in plan and "create ~/.config/opencode/plugin/engram.js" in plan

    assert run("--yes") == 0
    after = snapshot(home)
    # a byte-identical backup of every file that existed, and only of those that changed
    copies = {str(b.relative_to(home)).split(".engram-backup-")[0]: b for b in backups(home)}
    assert set(copies) == set(before)
    assert all(b.read_bytes() == before[rel] for rel, b in copies.items())
    # every other tool's entry is still there, Engram's is added
    for rel, original in JSON_FILES.items():
        data = json.loads(after[rel])
        for key, value in original.items():
            if isinstance(value, dict):
                for name, item in value.items():
                    assert data[key][name] == item or _kept_hook(data[key][name], item), (rel, name)
            else:
                assert data[key] == value, (rel, key)
    assert json.loads(after[".claude.json"])["mcpServers"]["engram"]["args"] == ["mcp"]
    assert json.loads(after[".config/Code/User/mcp.json"])["servers"]["engram"]["type"] == "stdio"
    assert "engram" in json.loads(after[".config/opencode/opencode.json"])["mcp"]
    assert json.loads(after[".gemini/trustedFolders.json"]) == {
        "/srv/elsewhere": "TRUST_FOLDER",
        str(Path.cwd()): "TRUST_FOLDER",
    }
    codex = after[".codex/config.toml"].decode()
    assert codex.startswith(CODEX_TOML)  # comments and the user's tables untouched
    parsed = tomllib.loads(codex)
    assert parsed["mcp_servers"]["other"] == {"command": "other-mcp", "args": ["--x"]}
    assert parsed["mcp_servers"]["engram"]["args"] == ["mcp"]
    assert "engram-hook" in after[".config/opencode/plugin/engram.js"].decode()
    capsys.readouterr()

    assert run("--yes") == 0
    assert "Nothing to change." in capsys.readouterr().out
    assert snapshot(home) == after and len(backups(home)) == len(copies)

    assert run("--uninstall", "--yes") == 0
    assert snapshot(home) == before  # every file back byte for byte, the plugin gone
    capsys.readouterr()
    assert run("--uninstall", "--yes") == 0
    assert "nothing of Engram's is installed" in capsys.readouterr().out


def _kept_hook(groups: object, original: object) -> bool:
    """A hook list still holding the other tool's groups first, then Engram's."""
    assert isinstance(groups, list) and isinstance(original, list)
    return groups[: len(original)] == original


def test_setup_in_an_empty_home_creates_files_and_uninstall_removes_them(home: Path) -> None:
    (home / ".codex").mkdir()
    (home / ".gemini").mkdir()
    assert run("--yes") == 0
    created = snapshot(home)
    assert set(created) == {
        ".codex/config.toml",
        ".codex/hooks.json",
        ".gemini/settings.json",
        ".gemini/trustedFolders.json",
    }
    assert backups(home) == []
    assert run("--uninstall", "--yes") == 0
    assert snapshot(home) == {}


def test_the_numbers_answer_wires_only_those_agents(home: Path, tmp_path: Path) -> None:
    before = make_home(home)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "ENGRAM_HOME": str(tmp_path / "engram")}
    env["ENGRAM_EMBEDDER"] = "none"
    result = subprocess.run(
        [str(ENGRAM), "setup", "--agent", "cursor", "--agent", "windsurf"],
        input="2\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path.cwd(),
    )
    assert result.returncode == 0, result.stderr
    assert "1. Cursor" in result.stdout and "2. Windsurf" in result.stdout
    after = snapshot(home)
    changed = {rel for rel in before if after[rel] != before[rel]}
    assert changed == {".codeium/windsurf/mcp_config.json"}


def test_a_no_answer_changes_nothing(home: Path, tmp_path: Path) -> None:
    before = make_home(home)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "ENGRAM_HOME": str(tmp_path / "engram")}
    result = subprocess.run(
        [str(ENGRAM), "setup"], input="n\n", env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Nothing changed." in result.stdout
    assert snapshot(home) == before and backups(home) == []


def test_a_broken_config_file_is_named_and_nothing_is_written(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_home(home)
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {')
    before = snapshot(home)
    assert run("--yes") == 2
    err = capsys.readouterr().err
    assert str(home / ".cursor" / "mcp.json") in err and "not valid JSON" in err
    assert snapshot(home) == before and backups(home) == []


def test_an_unknown_agent_is_named(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--agent", "vim", "--plan") == 2
    assert "unknown agent 'vim'" in capsys.readouterr().err


def test_no_agent_found_says_so(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--plan") == 2
    assert "no coding agent found" in capsys.readouterr().err


def test_uninstall_leaves_a_folder_the_user_trusted_themselves(home: Path) -> None:
    make_home(home)
    trusted = home / ".gemini" / "trustedFolders.json"
    mine = {"/srv/elsewhere": "TRUST_FOLDER", str(Path.cwd()): "TRUST_FOLDER"}
    trusted.write_text(json.dumps(mine, indent=2) + "\n")
    assert run("--yes", "--agent", "gemini") == 0
    assert json.loads(trusted.read_text()) == mine  # already trusted: nothing added
    assert run("--uninstall", "--yes", "--agent", "gemini") == 0
    assert json.loads(trusted.read_text()) == mine


def test_a_remote_server_is_reached_over_http_with_the_key_from_the_environment(
    home: Path, tmp_path: Path
) -> None:
    make_home(home)
    url = "https://memory.example.com"
    assert run("--yes", "--url", url, "--key", "egm_remote_key") == 0
    claude = json.loads((home / ".claude.json").read_text())["mcpServers"]["engram"]
    assert claude == {
        "type": "http",
        "url": f"{url}/mcp",
        "headers": {"Authorization": "Bearer ${ENGRAM_TOKEN}"},
    }
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["engram"]
    assert codex == {"url": f"{url}/mcp", "bearer_token_env_var": "ENGRAM_TOKEN"}
    hooks = (home / ".claude" / "settings.json").read_text()
    assert f"ENGRAM_URL={url}" in hooks and "egm_remote_key" not in hooks
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert "engram" not in desktop["mcpServers"]  # it cannot reach a remote server
    token = tmp_path / "engram" / "token"
    assert token.read_text().strip() == "egm_remote_key" and token.stat().st_mode & 0o077 == 0
    for path in home.rglob("*"):
        if path.is_file():
            assert b"egm_remote_key" not in path.read_bytes(), path


@pytest.mark.slow
def test_setup_prepares_the_model_so_the_first_mcp_call_does_not(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.embeddings.static import is_prepared

    cache = tmp_path / "cache"
    monkeypatch.setenv("ENGRAM_EMBEDDER", "default")
    monkeypatch.setenv("ENGRAM_MODEL_CACHE", str(cache))
    (home / ".codex").mkdir()
    assert run("--plan") == 0
    assert "prepare the embedding model" in capsys.readouterr().out and not is_prepared(cache)
    assert run("--yes") == 0
    assert "model: minilm-static-v1 ready in" in capsys.readouterr().out
    assert is_prepared(cache)
    # ... and the clients launch 'engram mcp' on that cache: a desktop app inherits no shell
    # settings, and Claude Desktop's first call distilled the model again (walkthrough 35b)
    (home / ".config/Claude").mkdir(parents=True)
    assert run("--yes") == 0
    desktop = json.loads((home / ".config/Claude/claude_desktop_config.json").read_text())
    assert desktop["mcpServers"]["engram"]["env"]["ENGRAM_MODEL_CACHE"] == str(cache)
    codex = (home / ".codex/config.toml").read_text()
    assert f'ENGRAM_MODEL_CACHE = "{cache}"' in codex
    capsys.readouterr()
    assert run("--yes") == 0
    assert "Nothing to change." in capsys.readouterr().out


def test_a_key_that_would_replace_another_is_refused_before_any_change(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = make_home(home)
    token = tmp_path / "engram" / "token"
    token.parent.mkdir()
    token.write_text("egm_the_local_owner\n")
    assert run("--yes", "--url", "https://memory.example.com", "--key", "egm_other") == 2
    assert "already holds another key" in capsys.readouterr().err
    assert snapshot(home) == before and backups(home) == []
    assert token.read_text() == "egm_the_local_owner\n"


def test_a_local_server_on_another_port_is_wired_into_the_hooks_as_hooks_install_does(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".claude").mkdir()
    settings = home / ".claude" / "settings.json"

    def posts_to() -> str:
        command = json.loads(settings.read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
        assert isinstance(command, str)
        return command

    monkeypatch.setenv("ENGRAM_URL", "http://127.0.0.1:8811")
    assert run("--yes", "--agent", "claude") == 0
    assert "ENGRAM_URL=http://127.0.0.1:8811 " in posts_to()
    mcp = json.loads((home / ".claude.json").read_text())["mcpServers"]["engram"]
    assert mcp["args"] == ["mcp"] and "url" not in mcp  # still launched locally (stdio)
    capsys.readouterr()
    assert main(["hooks", "install", "--agent", "claude"]) == 0  # the same wiring
    assert "claude: unchanged" in capsys.readouterr().out
    assert run("--yes", "--agent", "claude") == 0
    assert "Nothing to change." in capsys.readouterr().out

    # no ENGRAM_URL (an agent started from a desktop launcher): the installed service's port
    monkeypatch.delenv("ENGRAM_URL")
    assert main(["service", "install", "--port", "8812"]) == 0  # no systemctl here: written
    assert run("--yes", "--agent", "claude") == 0
    assert "ENGRAM_URL=http://127.0.0.1:8812 " in posts_to()
    assert "engram service install --port 8812" in capsys.readouterr().out
    assert main(["hooks", "install", "--agent", "claude"]) == 0
    assert "claude: unchanged" in capsys.readouterr().out


def test_uninstall_keeps_the_blank_line_before_a_table_the_user_added_after_engrams(
    home: Path,
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    mine = '# my codex config\nmodel = "gpt-5"\n\n[mcp_servers.other]\ncommand = "other"\n'
    config.write_text(mine + '\n[profiles.x]\nmodel = "o3"\n')
    assert run("--yes", "--agent", "codex") == 0
    with config.open("a") as f:
        f.write('\n[profiles.y]\nmodel = "o4"\n')
    assert run("--uninstall", "--yes", "--agent", "codex") == 0
    tables = '\n[profiles.x]\nmodel = "o3"\n\n[profiles.y]\nmodel = "o4"\n'
    assert config.read_text() == mine + tables


def test_claude_desktop_alone_needs_no_server(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walkthrough 35b: a Claude Desktop user (stdio, no hooks) was told to keep a server
    running, and 'engram doctor' failed on the server that nothing of theirs needs."""
    from tests.live_server import free_port

    (home / ".config/Claude").mkdir(parents=True)
    monkeypatch.setenv("ENGRAM_URL", f"http://127.0.0.1:{free_port()}")  # nothing answers
    assert run("--yes") == 0
    out = capsys.readouterr().out
    assert "claude_desktop_config.json" in out and "keep it running" not in out
    assert main(["doctor"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "warn server:" in out and "stdio clients start 'engram mcp'" in out, out


def test_a_database_password_is_never_written_into_a_client_config(tmp_path: Path) -> None:
    """The review of stop 35: the clients' entries carried ENGRAM_DATABASE_URL with its
    password into their config files; a URL without one is passed on."""
    from engram.setup import session

    home = tmp_path / "h"
    secret = {"ENGRAM_DATABASE_URL": "postgresql://engram:" + "S3cretPw@db/engram"}
    wiring = session.make_wiring(home, "http://127.0.0.1:8765", [], secret)
    assert "ENGRAM_DATABASE_URL" not in wiring.launch.env
    plain = {"ENGRAM_DATABASE_URL": "postgresql://engram@db/engram", "ENGRAM_EMBEDDER": "none"}
    wiring = session.make_wiring(home, "http://127.0.0.1:8765", [], plain)
    assert wiring.launch.env == {"ENGRAM_HOME": str(home), **plain}
