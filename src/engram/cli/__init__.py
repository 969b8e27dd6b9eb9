"""The ``engram`` command line. Domain errors become one-line messages here, never tracebacks."""

from __future__ import annotations

import inspect
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from engram.cli.common import NOTES, console, make_state, service
from engram.config import DEFAULT_PORT
from engram.errors import EngramError, InvalidInput, NotFound
from engram.service.environments import validation_message


def root(
    ctx: typer.Context,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="Data directory (default: ENGRAM_HOME, else the platform's user data dir).",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="postgresql://… or sqlite:///path (default: ENGRAM_DATABASE_URL, else "
            "<home>/engram.db).",
        ),
    ] = None,
) -> None:
    ctx.obj = make_state(home)
    if database_url:
        ctx.obj.settings = replace(ctx.obj.settings, database_url=database_url)


def init(
    ctx: typer.Context,
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Replace the owner token and print the new one.")
    ] = False,
) -> None:
    """Create the data directory, the database, the default environment, the owner account and
    its token file (<home>/token, mode 0600). Safe to re-run: nothing changes and no secret is
    printed unless --rotate."""
    from engram.cli import keys
    from engram.setup.model import prepare as prepare_model

    with service(ctx, init=True) as (engram, st):
        env = engram.environments.ensure_default(st.actor)
        issued = keys.bootstrap(engram, st.settings.home, rotate=rotate)
        console.print(f"Engram is ready in [bold]{st.settings.home}[/bold]")
        console.print(f"database: {st.settings.database_url}")
        console.print(f"default environment: {env.name} ({env.id})")
        console.print(f"owner token: {st.settings.home / 'token'} (mode 0600)")
        owner = engram.accounts.get_user(st.actor.user_id, st.actor)
        how = "" if owner.has_password else " once 'engram users passwd' has set a password"
        console.print(
            f"dashboard: http://127.0.0.1:{DEFAULT_PORT}/ui under 'engram serve' (the port "
            "of its --port, if given); "
            f"sign in as {owner.name}{how}"
        )
        if engram.embedder is not None:
            # the default model is distilled once from the shipped MiniLM weights (~75 s), here
            # rather than inside the first MCP tool call
            ready, took = prepare_model(
                st.settings.embedder, st.settings.model_cache, st.settings.embeddings_api_key
            )
            console.print(f"embedder: {ready.detail} (in {took:.1f} s)")
        else:
            console.print("embedder: none (keyword search only)")
        if issued is not None and rotate:
            console.print("new token (the old one no longer works):")
            typer.echo(issued.token)


LIGHT = ("serve",)
"""Commands run with only their own module loaded: a server's start-up does not import the
modules of the thirty other commands (their tables, setup and import code)."""
_ROOT_OPTIONS = ("--home", "--database-url")


def command_of(argv: list[str]) -> str | None:
    """The command ``argv`` runs (after the root options), if any."""
    args = iter(argv)
    for arg in args:
        if arg in _ROOT_OPTIONS:
            next(args, None)
        elif not arg.startswith(_ROOT_OPTIONS):
            return arg
    return None


def build_app(command: str | None = None) -> typer.Typer:
    """The ``engram`` command line: every command, or for a command in :data:`LIGHT` only it
    (the same root options, the same command)."""
    app = typer.Typer(
        name="engram",
        help="Engram: a persistent memory layer for AI. Facts, episodes and procedures, "
        "per-project environments, full history.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
    )
    app.callback()(root)
    if command in LIGHT:
        from engram.cli import serve

        serve.register(app)
        return app
    from engram.cli import (
        audit,
        backup,
        env,
        erasure,
        extract,
        handoffs,
        hooks,
        keys,
        maintain,
        mcp,
        memories,
        migrate_store,
        portability,
        profile,
        search,
        serve,
        setup,
        soul,
    )

    app.command()(init)
    memories.register(app)
    search.register(app)
    maintain.register(app)
    app.add_typer(env.app, name="env")
    app.add_typer(keys.app, name="keys")
    app.add_typer(keys.users_app, name="users")
    app.add_typer(erasure.app, name="conversations")
    audit.register(app)
    extract.register(app)
    serve.register(app)
    mcp.register(app)
    migrate_store.register(app)
    backup.register(app)
    portability.register(app)
    app.add_typer(soul.app, name="soul")
    app.add_typer(profile.app, name="profile")
    app.add_typer(handoffs.app, name="handoff")
    hooks.register(app)
    setup.register(app)
    _one_line_summaries(app)
    return app


def _one_line_summaries(app: typer.Typer) -> None:
    """Give each command (here and in every sub-group) the first paragraph of its docstring as
    its one-line summary: Typer's list of commands keeps the docstring's line breaks (each
    command's own --help joins them), which broke sentences in the middle in 'engram --help'."""
    for info in app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n")[0].split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _one_line_summaries(group.typer_instance)


_EXIT = {InvalidInput: 2, NotFound: 3}


def main(argv: list[str] | None = None) -> int:
    NOTES.clear()
    try:
        # without standalone mode click returns a typer.Exit's code instead of raising it
        app = build_app(command_of(sys.argv[1:] if argv is None else argv))
        code = app(args=argv, prog_name="engram", standalone_mode=False)
    except EngramError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        return next((code for cls, code in _EXIT.items() if isinstance(exc, cls)), 1)
    except ValidationError as exc:
        typer.echo(f"error: {validation_message(exc)}", err=True)
        return 2
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except OSError as exc:  # a file the command reads or writes: which, and why
        where = f"{exc.filename}: " if exc.filename else ""
        typer.echo(f"error: {where}{exc.strerror or exc}", err=True)
        return 1
    except KeyboardInterrupt:
        return 130
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.TyperException as exc:  # usage errors: unknown option, missing argument...
        message = getattr(exc, "format_message", None)
        ctx = getattr(exc, "ctx", None)
        if callable(message):  # one line, as every other error: what, and where to look
            where = getattr(ctx, "command_path", None) or "engram"
            typer.echo(f"error: {str(message()).rstrip('.')} (see '{where} --help')", err=True)
        else:
            exc_show = getattr(exc, "show", None)
            if callable(exc_show):
                exc_show()
        return int(getattr(exc, "exit_code", 2))
    code = code if isinstance(code, int) else 0
    if code == 0:
        for note in NOTES:
            typer.echo(note, err=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
