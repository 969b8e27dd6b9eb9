"""engram setup checked by the real agent CLIs' own commands (npm, tests/agents): after
setup in a HOME that already holds another tool's servers, `claude mcp list` and `opencode mcp
list` show Engram connected, `codex mcp list` lists it enabled, and `gemini mcp list` shows it
connected only once setup has trusted the folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.agents.harness import BIN, ENGRAM, available
from tests.setup_fixtures import make_home

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    missing = [a for a in ("claude", "codex", "gemini", "opencode") if not available(a)]
    if missing:
        pytest.skip(f"agent CLIs not installed ({', '.join(missing)}): npm install in tests/agents")
    home = tmp_path / "home"
    make_home(home)
    node = str(Path(shutil.which("node") or "/usr/bin/node").parent)
    return {
        "HOME": str(home),
        "PATH": f"{BIN}:{node}:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "ENGRAM_HOME": str(tmp_path / "engram"),
        "ENGRAM_MODEL_CACHE": os.environ.get("ENGRAM_MODEL_CACHE", ""),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
    }


def run(env: dict[str, str], cwd: Path, *args: str) -> str:
    result = subprocess.run(
        list(args), env=env, cwd=cwd, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


def test_the_agents_own_checks_see_engram(env: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    setup = run(env, project, str(ENGRAM), "setup", "--yes", "--no-trust")
    assert "created" in setup and "changed" in setup, setup

    gemini = run(env, project, str(BIN / "gemini"), "mcp", "list")
    assert re.search(r"engram: .*engram mcp \(stdio\) - Disabled", gemini), gemini

    setup = run(env, project, str(ENGRAM), "setup", "--yes")
    assert "trust " + str(project) in setup, setup
    gemini = run(env, project, str(BIN / "gemini"), "mcp", "list")
    assert re.search(r"engram: .*engram mcp \(stdio\) - Connected", gemini), gemini

    claude = run(env, project, str(BIN / "claude"), "mcp", "list")
    assert re.search(r"engram: .*engram mcp - ✔ Connected", claude), claude
    assert "other:" in claude  # the other tool's server is still registered

    opencode = run(env, project, str(BIN / "opencode"), "mcp", "list")
    assert re.search(r"✓ engram\s+connected", opencode), opencode

    codex = run(env, project, str(BIN / "codex"), "mcp", "list")
    assert re.search(r"^engram\s+\S*engram\s+mcp\s.*enabled", codex, re.M), codex
    assert re.search(r"^other\s+other-mcp", codex, re.M), codex

    again = run(env, project, str(ENGRAM), "setup", "--yes")
    assert "Nothing to change." in again, again
