"""The ``engram`` command line. Domain errors become one-line messages here, never tracebacks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from engram.cli import env, memories
from engram.cli.common import console, make_state, service
from engram.errors import EngramError, InvalidInput, NotFound
from engram.service.environments import validation_message

app = typer.Typer(
    name="engram",
    help="Engram: a persistent memory layer for AI. Facts, episodes and procedures, "
    "per-project environments, full history.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def root(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Data directory (default: ENGRAM_HOME, else the platform's user data dir).",
            envvar="ENGRAM_HOME",
        ),
    ] = None,
) -> None:
    ctx.obj = make_state(home)


@app.command()
def init(ctx: typer.Context) -> None:
    """Create the data directory, the database and the default environment."""
    with service(ctx) as (engram, st):
        env = engram.environments.ensure_default(st.actor)
        console.print(f"Engram is ready in [bold]{st.settings.home}[/bold]")
        console.print(f"database: {st.settings.database_url}")
        console.print(f"default environment: {env.name} ({env.id})")


memories.register(app)
app.add_typer(env.app, name="env")

_EXIT = {InvalidInput: 2, NotFound: 3}


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, prog_name="engram", standalone_mode=False)
    except EngramError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        return next((code for cls, code in _EXIT.items() if isinstance(exc, cls)), 1)
    except ValidationError as exc:
        typer.echo(f"error: {validation_message(exc)}", err=True)
        return 2
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except KeyboardInterrupt:
        return 130
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument...
        exc_show = getattr(exc, "show", None)
        if callable(exc_show):
            exc_show()
        return int(getattr(exc, "exit_code", 2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
