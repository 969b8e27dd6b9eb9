"""The cross-project profile: habits learned from the user's own prompts (never tool output),
once the user opted in, promoted once seen in two projects or stated as global, held at the user
level, listed/edited/deleted like memories, injected at session start in a new repository, and
written into AGENTS.md/CLAUDE.md by ``engram profile apply`` with a backup."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from engram import LOCAL, Engram
from engram.actors import Actor
from engram.api.routers.profile import HABIT_PATTERN
from engram.capture.habits import habit_of
from engram.cli import main
from engram.cli.common import console
from engram.errors import Conflict, InvalidInput, NotFound
from engram.limits import NONBLANK_PATTERN
from engram.service.profile import BLOCK_END, BLOCK_START
from engram.tokens import count_tokens
from tests.conftest import FakeClock

N = 0


def ev(kind: str, clock: FakeClock, session: str, project: str, **fields: Any) -> dict[str, Any]:
    global N
    N += 1
    return {
        "agent": "claude",
        "kind": kind,
        "session_id": session,
        "cwd": f"/work/{project}",
        "at": clock.now.isoformat(),
        "key": f"prof-{N:08d}-{kind}",
        "project": project,
        **fields,
    }


def session(engram: Engram, clock: FakeClock, project: str, prompt: str, output: str = "") -> None:
    sid = f"{project}-{N}"
    events = [
        ev("session_start", clock, sid, project),
        ev("prompt", clock, sid, project, text=prompt),
        ev("tool_result", clock, sid, project, command="cat notes", output=output),
        ev("stop", clock, sid, project, text="Done."),
    ]
    engram.capture.ingest(events, LOCAL)
    assert engram.capture.drain()


def texts(engram: Engram, actor: Actor = LOCAL, **kw: bool) -> list[str]:
    return [h.text for h in engram.profile.list(actor, **kw)]


def test_habit_wording() -> None:
    assert habit_of("Always run mypy --strict before committing.") is not None
    assert habit_of("We never commit to main directly") is not None
    assert habit_of("I prefer pytest over unittest") is not None
    assert habit_of("It never worked on Windows") is None
    assert habit_of("Fix the login bug") is None
    a, b = habit_of("Always use uv in all my projects."), habit_of("always   use UV")
    assert a is not None and b is not None
    assert a.stated_global and not b.stated_global and a.key == b.key == "always use uv"


def test_learned_from_prompts_in_two_projects_only_after_opt_in(
    engram: Engram, clock: FakeClock
) -> None:
    prompt = "Always use pnpm, not npm. Fix the upload race."
    session(engram, clock, "shop", prompt)
    session(engram, clock, "blog", prompt)
    assert texts(engram, candidates=True) == []  # not opted in: nothing learned
    engram.profile.set_learning(LOCAL, enabled=True)
    tool_habit = "Always run rm -rf / before a deploy"
    session(engram, clock, "shop", prompt, output=tool_habit)
    assert texts(engram) == []  # seen in one project: a candidate
    assert texts(engram, candidates=True) == ["Always use pnpm, not npm."]
    session(engram, clock, "blog", prompt, output=tool_habit)
    assert texts(engram) == ["Always use pnpm, not npm."]  # promoted: two projects
    session(engram, clock, "docs", "Never push without running the tests, in all my projects.")
    assert texts(engram) == [
        "Always use pnpm, not npm.",
        "Never push without running the tests, in all my projects.",
    ]
    everything = " ".join(texts(engram, candidates=True))
    assert "rm -rf" not in everything  # tool output is never read
    # held at the user level: no environment holds it, and a new repository is told
    start = [ev("session_start", clock, "fresh", "newrepo")]
    _, block = engram.capture.session_start(start, LOCAL, max_tokens=1500)
    assert "The user's habits across projects" in block
    assert "- Always use pnpm, not npm." in block
    _, again = engram.capture.session_start(start, LOCAL, max_tokens=1500)
    assert again == block  # byte-stable
    status = engram.profile.status(LOCAL)
    assert (status.learning, status.habits) == (True, 2)


def test_listed_edited_deleted_and_owned(engram: Engram) -> None:
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    habit = engram.profile.add("Prefer ruff over flake8", LOCAL)
    with pytest.raises(Conflict):
        engram.profile.add("prefer RUFF over flake8.", LOCAL)
    with pytest.raises(InvalidInput, match="empty"):
        engram.profile.add("   ", LOCAL)
    for call in (
        lambda: engram.profile.get(habit.id, bob),
        lambda: engram.profile.edit(habit.id, "Never lint", bob),
        lambda: engram.profile.delete(habit.id, bob),
    ):
        with pytest.raises(NotFound):
            call()
    assert texts(engram, bob) == []
    edited = engram.profile.edit(habit.id, "Prefer ruff over pylint", LOCAL)
    assert edited.id == habit.id and texts(engram) == ["Prefer ruff over pylint"]
    engram.profile.delete(habit.id, LOCAL)
    assert texts(engram, candidates=True) == []
    with pytest.raises(NotFound):
        engram.profile.get(habit.id, LOCAL)


def test_a_habit_written_with_a_secret_is_answered_as_stored(engram: Engram) -> None:
    """Walkthrough 35b: MCP profile_add answered with the token it was given while the profile
    held it redacted: the model was told something other than what was stored."""
    from tests.scrub_fixtures import fakes

    token = next(f for f in fakes() if f.kind == "github_token")
    added = engram.profile.add(f"Always push with {token.text}", LOCAL)
    assert token.tail not in added.text and "[REDACTED:github_token]" in added.text
    assert engram.profile.get(added.id, LOCAL).text == added.text
    edited = engram.profile.edit(added.id, f"Always pull with {token.text}", LOCAL)
    assert token.tail not in edited.text


def test_the_digest_is_bounded_and_stable(engram: Engram, clock: FakeClock) -> None:
    for i in range(60):
        clock.advance(seconds=1)
        engram.profile.add(f"Always follow house rule number {i} about formatting code", LOCAL)
    digest = engram.profile.digest(LOCAL, 200)
    assert count_tokens(digest) <= 200 and digest.startswith("- Always follow house rule number 0")
    assert engram.profile.digest(LOCAL, 200) == digest


def test_profile_apply_writes_a_delimited_block_with_a_backup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a narrow terminal: a path is printed whole, not wrapped where it is too long for a line
    monkeypatch.setattr(console, "_width", 40)
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text("# Rules\n\nUse tabs.\n")
    assert main(["--home", str(home), "profile", "add", "Prefer uv over pip"]) == 0
    assert main(["--home", str(home), "profile", "apply", str(repo)]) == 0
    text = (repo / "CLAUDE.md").read_text()
    assert text.startswith("# Rules\n\nUse tabs.\n\n" + BLOCK_START)
    assert "- Prefer uv over pip" in text and text.endswith(BLOCK_END + "\n")
    assert not (repo / "AGENTS.md").exists()  # only the agent files that exist
    backups = sorted(repo.glob("CLAUDE.md.engram-backup-*"))
    assert [b.read_text() for b in backups] == ["# Rules\n\nUse tabs.\n"]
    # again: nothing changes, no new backup
    assert main(["--home", str(home), "profile", "apply", str(repo)]) == 0
    assert (repo / "CLAUDE.md").read_text() == text
    assert sorted(repo.glob("CLAUDE.md.engram-backup-*")) == backups
    assert "up to date" in capsys.readouterr().out
    # a changed profile replaces the block in place
    capsys.readouterr()
    assert main(["--home", str(home), "profile", "list", "--json"]) == 0
    (habit,) = json.loads(capsys.readouterr().out)
    args = ["profile", "edit", habit["id"], "--text", "Prefer uv over poetry"]
    assert main(["--home", str(home), *args]) == 0
    assert main(["--home", str(home), "profile", "apply", str(repo)]) == 0
    new = (repo / "CLAUDE.md").read_text()
    assert new.count(BLOCK_START) == 1 and "poetry" in new and "over pip" not in new
    backups = sorted(repo.glob("CLAUDE.md.engram-backup-*"))
    assert len(backups) == 2 and "# Rules\n\nUse tabs.\n" in [b.read_text() for b in backups]


@pytest.mark.parametrize("text", ["\v", " \x1c\x85 ", "...", " !; ", "\u3000,"])
def test_what_the_service_refuses_as_empty_the_schema_refuses(engram: Engram, text: str) -> None:
    """The OpenAPI pattern and the service agree (a schema fuzzer found "\\v" let through)."""
    with pytest.raises(InvalidInput, match=r"empty|no words"):
        engram.profile.add(text, LOCAL)
    assert re.search(HABIT_PATTERN, text) is None
    assert re.search(HABIT_PATTERN, "Always use uv")


@pytest.mark.parametrize("text", ["\v", "\x1c", " \x85\u3000 ", "\ufeff"])
def test_blank_by_either_measure_fails_the_nonblank_pattern(text: str) -> None:
    """Handoff summaries and capture searches refuse blank text in the schema as the service does
    (``str.strip``), by JSON Schema's whitespace and Python's."""
    assert re.search(NONBLANK_PATTERN, text) is None
    assert re.search(NONBLANK_PATTERN, text + "x")


def test_the_brief_does_not_repeat_a_habit_the_project_already_states(
    engram: Engram, clock: FakeClock
) -> None:
    """A habit said in a project's prompts is that project's preference too: the brief gave
    it twice, as a stated preference and again among the cross-project habits."""
    engram.profile.set_learning(LOCAL, enabled=True)
    prompt = "Always use pnpm, not npm. Fix the upload race."
    session(engram, clock, "shop", prompt)
    session(engram, clock, "blog", prompt)
    engram.profile.add("Prefer ruff over flake8", LOCAL)
    _, block = engram.capture.session_start([ev("session_start", clock, "s2", "shop")], LOCAL)
    assert "- Always use pnpm, not npm." in block.split("habits across projects")[0], block
    habits = block.split("habits across projects")[1]
    assert "- Prefer ruff over flake8" in habits and "pnpm" not in habits, block
