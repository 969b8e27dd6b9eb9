"""The 'engram soul' commands, run in process against a temporary ENGRAM_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return out


def test_set_show_history_diff_restore(capsys: pytest.CaptureFixture[str]) -> None:
    assert "is now version 1" in ok(capsys, "soul", "set", "identity", "You are Ada.")
    ok(capsys, "soul", "set", "identity", "You are Ada, terse.", "--reason", "shorter")
    ok(capsys, "soul", "set", "rules", "--priority", "10", "--disable")
    assert ok(capsys, "soul", "show", "identity") == "You are Ada, terse.\n"

    view = json.loads(ok(capsys, "soul", "show", "--json"))
    assert view["environment"] == "default"
    rules = next(b for b in view["blocks"] if b["name"] == "rules")
    assert rules["priority"] == 10 and rules["enabled"] is False
    assert "identity" in ok(capsys, "soul", "show")  # the table

    versions = json.loads(ok(capsys, "soul", "history", "identity", "--json"))
    assert [v["state"]["text"] for v in versions] == ["You are Ada.", "You are Ada, terse."]
    assert versions[1]["reason"] == "shorter"
    diff = ok(capsys, "soul", "diff", "identity")
    assert "-You are Ada.\n+You are Ada, terse." in diff

    assert "version 3" in ok(capsys, "soul", "restore", "identity", "--version", "1")
    assert ok(capsys, "soul", "show", "identity") == "You are Ada.\n"


def test_env_overrides_and_xml(capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "env", "create", "webapp")
    ok(capsys, "soul", "set", "current_focus", "Global focus.")
    ok(capsys, "soul", "set", "current_focus", "Checkout page.", "--env", "webapp")
    ok(capsys, "soul", "set", "rules", "Global rule.")
    ok(capsys, "soul", "set", "rules", "Webapp rule.", "--env", "webapp", "--mode", "extend")
    assert ok(capsys, "soul", "show", "current_focus", "--env", "webapp") == "Checkout page.\n"
    assert ok(capsys, "soul", "show", "current_focus") == "Global focus.\n"
    ok(capsys, "env", "use", "webapp")  # show follows the current environment
    assert ok(capsys, "soul", "show", "rules") == "Global rule.\n\nWebapp rule.\n"

    code, out, err = run(capsys, "soul", "show", "--xml")
    assert code == 0 and out.startswith("<context>\n<rules>\nGlobal rule.")
    assert "Checkout page." in out and "tokens" in err
    rendered = json.loads(ok(capsys, "soul", "show", "--xml", "--max-tokens", "15", "--json"))
    assert rendered["tokens"] <= 15 and rendered["dropped"]


def test_set_from_file_and_edit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "style.md"
    src.write_text("Short answers.\nNo emoji.\n")
    ok(capsys, "soul", "set", "communication_style", "--file", str(src))
    assert ok(capsys, "soul", "show", "communication_style") == "Short answers.\nNo emoji.\n"

    monkeypatch.setenv("EDITOR", "sed -i s/Short/Brief/")
    assert "version 2" in ok(capsys, "soul", "edit", "communication_style")
    assert ok(capsys, "soul", "show", "communication_style") == "Brief answers.\nNo emoji.\n"
    monkeypatch.setenv("EDITOR", "true")  # saves nothing
    assert "no change" in ok(capsys, "soul", "edit", "communication_style")


def test_snapshot_preset_and_restore(capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "soul", "set", "personality", "Grumpy but kind.")
    snap = json.loads(ok(capsys, "soul", "snapshot", "--label", "mine", "--json"))
    assert snap["label"] == "mine" and len(snap["blocks"]) == 1

    listed = ok(capsys, "soul", "preset")
    assert all(name in listed for name in ("balanced", "creative", "technical", "mentor"))
    out = ok(capsys, "soul", "preset", "mentor")
    assert "changed worldview, personality" in out and "restore --snapshot snap_" in out
    assert ok(capsys, "soul", "show", "personality").startswith("Patient, warm")
    assert "-Grumpy but kind." in ok(capsys, "soul", "diff", "--snapshot", snap["id"])

    snaps = json.loads(ok(capsys, "soul", "history", "--json"))
    assert [s["kind"] for s in snaps] == ["manual", "auto"]
    assert "restored" in ok(capsys, "soul", "restore", "--snapshot", snap["id"])
    assert ok(capsys, "soul", "show", "personality") == "Grumpy but kind.\n"
    assert "no differences" in ok(capsys, "soul", "diff", "--snapshot", snap["id"])


def test_custom_block(capsys: pytest.CaptureFixture[str]) -> None:
    ok(capsys, "soul", "set", "hobbies", "Chess.", "--section", "context")
    assert ok(capsys, "soul", "show", "hobbies") == "Chess.\n"
    assert "<hobbies>\nChess.\n</hobbies>" in ok(capsys, "soul", "show", "--xml")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["soul", "set", "identiti", "x"], 3, "unknown block 'identiti'; valid blocks are:"),
        (["soul", "show", "nope"], 3, "unknown block 'nope'"),
        (["soul", "set", "rules", "x" * 8001], 2, "8001 characters; the limit is 8000"),
        (["soul", "set", "rules", "x", "--priority", "500"], 2, "between 0 and 100"),
        (["soul", "preset", "pirate"], 2, "unknown preset 'pirate'"),
        (["soul", "restore", "identity", "--version", "4"], 3, "no version 4"),
        (["soul", "restore", "--snapshot", "snap_x"], 3, "snapshot 'snap_x' does not exist"),
        (["soul", "diff"], 2, "give a block name or --snapshot ID"),
        (["soul", "set", "rules", "x", "--env", "ghost"], 3, "environment 'ghost'"),
        (["soul", "set", "rules", "x", "--mode", "extend"], 1, "needs an environment"),
        (["soul", "set", "rules", "--file", "/nonexistent/f"], 2, "cannot read /nonexistent/f"),
    ],
)
def test_bad_input_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    got, out, err = run(capsys, *argv)
    assert got == code, err
    assert message in err
    assert "Traceback" not in err + out
    assert len(err.strip().splitlines()) == 1


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "soul", "--help")
    assert code == 0
    for command in ("show", "edit", "set", "history", "diff", "restore", "snapshot", "preset"):
        assert command in out
