"""``engram extract FILE`` and ``engram llm`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


PLAIN = [
    {"role": "user", "content": "I prefer dark mode in every editor I use."},
    {"role": "assistant", "content": "Dark mode is on."},
    {"role": "user", "content": "Before pushing, always run the linters."},
]


def test_dry_run_shows_proposals_and_stores_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = str(tmp_path / "h")
    file = tmp_path / "chat.json"
    file.write_text(json.dumps(PLAIN))
    code, out, _ = run(capsys, "--home", home, "extract", str(file), "--dry-run", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["dry_run"] is True and result["outcomes"] == []
    contents = [p["content"] for p in result["proposals"]]
    assert "The user prefers dark mode in every editor the user use." not in contents
    assert any(c.startswith("The user prefers dark mode") for c in contents)
    assert "Before pushing, always run the linters." in contents
    code, out, _ = run(capsys, "--home", home, "list", "--json")
    assert code == 0 and json.loads(out)["items"] == []


def test_extract_stores_our_format_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    file = tmp_path / "chat.json"
    file.write_text(
        json.dumps(
            {
                "conversation": {"id": "exp-1", "source": "chatgpt", "title": "Editor setup"},
                "messages": [{**m, "external_id": str(i)} for i, m in enumerate(PLAIN)],
            }
        )
    )
    code, out, _ = run(capsys, "--home", home, "extract", str(file))
    assert code == 0 and "3 new messages" in out
    code, out, _ = run(capsys, "--home", home, "list", "--json")
    stored = len(json.loads(out)["items"])
    assert stored >= 2
    code, out, _ = run(capsys, "--home", home, "extract", str(file), "--json")
    assert code == 0 and json.loads(out)["messages_added"] == 0
    code, out, _ = run(capsys, "--home", home, "list", "--json")
    assert len(json.loads(out)["items"]) == stored


def test_bad_files_get_one_line_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(capsys, "--home", home, "extract", str(bad))
    assert code == 2 and err.startswith("error:") and "not JSON" in err
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([{"role": "robot", "content": "hi"}]))
    code, _, err = run(capsys, "--home", home, "extract", str(wrong))
    assert code == 2 and "role" in err
    code, _, err = run(capsys, "--home", home, "extract", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_llm_provider_commands_never_show_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = str(tmp_path / "h")
    monkeypatch.setenv("MY_KEY", "sk-very-secret-1234")
    code, out, _ = run(
        capsys,
        "--home",
        home,
        "llm",
        "add",
        "ollama",
        "--model",
        "llama3",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--api-key-env",
        "MY_KEY",
        "--timeout",
        "0.5",
    )
    assert code == 0
    code, out, _ = run(capsys, "--home", home, "llm", "list")
    assert code == 0 and "ollama" in out and "key stored" in out and "sk-very" not in out
    # nothing listens on port 9: the LLM fails and the rules take over
    file = tmp_path / "chat.json"
    file.write_text(json.dumps(PLAIN))
    code, out, _ = run(
        capsys, "--home", home, "extract", str(file), "--llm", "ollama", "--dry-run", "--json"
    )
    assert code == 0
    result = json.loads(out)
    assert result["extractor"] == "rules" and result["fallback_reason"]
    code, _, err = run(capsys, "--home", home, "extract", str(file), "--llm", "nope")
    assert code == 3 and "not configured" in err
