"""What ``engram`` loads to run a command: ``engram serve`` (a server's start-up) imports none
of the other commands' modules; every other invocation sees every command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engram.cli import command_of, main

LOADED = """
import sys
from engram.cli import main
code = main(sys.argv[1:])
print(",".join(sorted(m for m in sys.modules if m.startswith("engram.cli"))))
"""


def _loaded(*argv: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, check=True
    ).stdout
    return out.strip().splitlines()[-1].split(",")


def test_serve_loads_only_its_own_command(tmp_path: Path) -> None:
    assert _loaded("--home", str(tmp_path), "serve", "--help") == [
        "engram.cli",
        "engram.cli.common",
        "engram.cli.serve",
    ]
    assert "engram.cli.memories" in _loaded("--home", str(tmp_path), "--help")


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["serve", "--port", "0"], "serve"),
        (["--home", "/h", "serve"], "serve"),
        (["--home=/h", "--database-url", "sqlite:///x", "search", "q"], "search"),
        (["--help"], "--help"),
        (["--home", "/h"], None),
    ],
)
def test_the_command_is_found_after_the_root_options(argv: list[str], command: str) -> None:
    assert command_of(argv) == command


def test_serve_usage_errors_are_the_commands_own(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "nope"]) == 2
    assert "Invalid value for '--port'" in capsys.readouterr().err
