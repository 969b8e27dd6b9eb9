"""What every CLI command shares: settings, the service, output, and the one place where
domain errors become one-line messages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from rich.console import Console

from engram.accounts import USER_ID_PREFIX
from engram.actors import LOCAL, Actor
from engram.capture.repo import RepoRulesError
from engram.capture.which import Choice, which_environment
from engram.config import Settings
from engram.errors import InvalidInput, NotFound
from engram.private_files import write_private
from engram.service import Engram

# soft wrap: a line is never broken at the console's width (80 columns when output is not a
# terminal), so a path, id or token printed on it can be copied whole; tables still fit the width
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

JsonOption = typer.Option("--json", help="Print JSON instead of a table.")
EnvOption = typer.Option(
    "--env",
    "-e",
    help="Environment name or id; one shared with you as OWNER/NAME or its id to write to it "
    "(default: ENGRAM_ENV, then the project of the working directory — its .engram.toml, else "
    "its git root — then the one chosen with 'env use', then 'default').",
)


@dataclass
class CliState:
    """Built once in the root callback from the global options and the process environment."""

    settings: Settings
    actor: Actor = LOCAL
    env_override: str | None = None
    choice: Choice = field(default_factory=lambda: Choice(None, "default"))
    """What the one rule chose for this working directory (``engram.capture.which``)."""
    _engram: Engram | None = field(default=None, repr=False)

    @property
    def state_file(self) -> Path:
        return self.settings.home / "state.json"

    def current_environment(self, explicit: str | None) -> str | None:
        """The environment to name in a call: ``--env``, ENGRAM_ENV, else None when the working
        directory is a project (the actor carries it), else the one chosen with 'env use'."""
        if explicit:
            return explicit
        if self.env_override:
            return self.env_override
        if self.actor.project:
            return None
        return self.chosen_environment()

    def chosen_environment(self) -> str | None:
        """The environment chosen with 'env use' (None: 'default')."""
        try:
            data = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        value = data.get("environment")
        return value if isinstance(value, str) else None

    def set_current_environment(self, name: str | None) -> None:
        write_private(self.state_file, json.dumps({"environment": name}))


def state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliState)
    return obj


@contextmanager
def service(ctx: typer.Context, *, init: bool = False) -> Iterator[tuple[Engram, CliState]]:
    """The service on the home the command names (``init``: the command that makes one, so
    a new home is no news)."""
    st = state(ctx)
    fresh = not init and _new_home(st.settings)
    engram = Engram.open(st.settings)
    try:
        yield engram, st
    finally:
        engram.close()
    note = (
        f"note: made a new Engram home at {st.settings.home} (another one is chosen with "
        "--home or ENGRAM_HOME)"
    )
    if fresh and note not in NOTES:  # a typo in --home must not pass for an empty memory
        NOTES.append(note)


NOTES: list[str] = []
"""Said on stderr once the command has succeeded (by ``main``: after an error, the error
alone, on one line)."""


def _new_home(settings: Settings) -> bool:
    """Whether opening ``settings`` makes a new SQLite store (a PostgreSQL one: never said)."""
    url = settings.database_url
    if "://" in url and not url.startswith("sqlite:///"):
        return False
    return not Path(url.removeprefix("sqlite:///")).exists()


def user_id(engram: Engram, ref: str, actor: Actor, *, gone: bool = False) -> str:
    """The id of the user ``ref`` names: their id or login name, as ``users list`` shows
    them ('*', everyone, as it is). An unknown user is :class:`NotFound`, never an empty
    answer; with ``gone``, an id that is no longer a user's (the audit of a deleted account)
    is kept as it is."""
    if ref == "*":
        return ref
    try:
        return engram.accounts.find_user(ref, actor).id
    except NotFound:
        if gone and ref.startswith(USER_ID_PREFIX):
            return ref
        raise


def make_state(home: Path | None, cwd: Path | None = None) -> CliState:
    settings = Settings.load(home)
    environ = {"ENGRAM_ENV": settings.environment} if settings.environment else {}
    try:
        choice = which_environment(None, environ, cwd or Path.cwd())
    except RepoRulesError as exc:
        raise InvalidInput(str(exc), field=".engram.toml") from exc
    actor = replace(LOCAL, project=choice.project)
    return CliState(settings, actor, settings.environment, choice)


def emit_json(value: Any) -> None:
    def plain(v: Any) -> Any:
        if isinstance(v, BaseModel):
            return v.model_dump(mode="json")
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    typer.echo(json.dumps(plain(value), indent=2, ensure_ascii=False))


def short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
