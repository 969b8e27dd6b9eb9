"""engram profile: the user's habits across projects (learn on|off, status, list, add, edit,
delete, apply)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from engram.cli.common import JsonOption, console, emit_json, service, short
from engram.cli.tables import memory_table
from engram.errors import InvalidInput
from engram.service.profile import Habit, with_block

app = typer.Typer(
    help="Your habits across projects (package manager, test layout, style, tools), held at the "
    "user level. Learned, once you opt in with 'engram profile learn on', from preference "
    "wording in your own prompts ('always …', 'never …', 'prefer X over Y'), never from tool "
    "output; a habit joins the profile once said in two projects or stated as global ('… in all "
    "my projects'). Precedence: your current instruction > the repository's rules > project "
    "memory > profile.",
    no_args_is_help=True,
)

AGENT_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")


@app.command()
def learn(
    ctx: typer.Context,
    switch: Annotated[str, typer.Argument(help="on or off.", metavar="on|off")],
) -> None:
    """Opt in (on) or out (off) of learning habits from your prompts (off until you say on)."""
    if switch not in ("on", "off"):
        raise InvalidInput(f"say 'on' or 'off', not {switch!r}", field="switch")
    with service(ctx) as (engram, st):
        status = engram.profile.set_learning(st.actor, enabled=switch == "on")
    console.print(f"learning habits from your prompts: {'on' if status.learning else 'off'}")


@app.command()
def status(ctx: typer.Context, as_json: Annotated[bool, JsonOption] = False) -> None:
    """Whether learning is on, and how many habits are in the profile and waiting."""
    with service(ctx) as (engram, st):
        out = engram.profile.status(st.actor)
    if as_json:
        emit_json(out)
        return
    console.print(
        f"learning: {'on' if out.learning else 'off'}; habits: {out.habits}; "
        f"candidates (seen in one project): {out.candidates}"
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    candidates: Annotated[
        bool, typer.Option("--candidates", help="Also the habits seen in one project so far.")
    ] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """The habits in your profile, oldest first."""
    with service(ctx) as (engram, st):
        habits = [Habit.of(e) for e in engram.profile.list(st.actor, candidates=candidates)]
    if as_json:
        emit_json(habits)
        return
    rows = [
        {
            "id": h.id,
            "in profile": "yes" if h.promoted else "no",
            "projects": "global" if h.stated_global else str(len(h.projects)),
            "habit": short(h.text, 70),
        }
        for h in habits
    ]
    # the ids stay whole (profile edit and delete take them), the habit folds
    cols = ("id", "in profile", "projects", "habit")
    console.print(memory_table(rows, cols, cols, fold="habit"))


@app.command()
def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The habit, in your words.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Write a habit by hand (part of the profile at once)."""
    with service(ctx) as (engram, st):
        habit = Habit.of(engram.profile.add(text, st.actor))
    if as_json:
        emit_json(habit)
    else:
        console.print(f"added {habit.id}: {habit.text}")


@app.command()
def edit(
    ctx: typer.Context,
    habit_id: Annotated[str, typer.Argument(help="The habit's id (hab_…).")],
    text: Annotated[str, typer.Option("--text", help="The new wording.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Change a habit's wording (an edited habit is part of the profile)."""
    with service(ctx) as (engram, st):
        habit = Habit.of(engram.profile.edit(habit_id, text, st.actor))
    if as_json:
        emit_json(habit)
    else:
        console.print(f"edited {habit.id}: {habit.text}")


@app.command()
def delete(
    ctx: typer.Context,
    habit_id: Annotated[str, typer.Argument(help="The habit's id (hab_…).")],
) -> None:
    """Remove a habit from the profile for good."""
    with service(ctx) as (engram, st):
        gone = engram.profile.delete(habit_id, st.actor)
    console.print(f"deleted {gone.id}: {gone.text}")


@app.command()
def apply(
    ctx: typer.Context,
    repo: Annotated[
        Path | None,
        typer.Argument(help="The repository (default: the project of the working directory)."),
    ] = None,
    file: Annotated[
        list[str] | None,
        typer.Option(
            "--file",
            help="Write into this file (repeatable; default: each of AGENTS.md, "
            "CLAUDE.md, GEMINI.md that exists, else AGENTS.md).",
        ),
    ] = None,
) -> None:
    """Write the profile as a delimited block (<!-- engram:profile:start/end -->) into the
    repository's AGENTS.md / CLAUDE.md / GEMINI.md, after a timestamped backup of each file it
    changes. Run again, it replaces the block; a file already up to date is left alone."""
    with service(ctx) as (engram, st):
        block = engram.profile.block(st.actor)
        root = repo or st.choice.root or Path.cwd()
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a directory", field="repo")
    names = list(file or [n for n in AGENT_FILES if (root / n).is_file()] or ["AGENTS.md"])
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for name in names:
        path = root / name
        old = path.read_text(encoding="utf-8") if path.is_file() else ""
        new = with_block(old, block)
        if new == old:
            console.print(f"{path}: up to date")
            continue
        if path.is_file():
            backup = path.with_name(f"{path.name}.engram-backup-{stamp}")
            n = 1
            while backup.exists():  # never overwrite an earlier backup
                n += 1
                backup = path.with_name(f"{path.name}.engram-backup-{stamp}-{n}")
            shutil.copy2(path, backup)
            console.print(f"{path}: backed up to {backup.name}")
        path.write_text(new, encoding="utf-8")
        console.print(f"{path}: profile block written")
