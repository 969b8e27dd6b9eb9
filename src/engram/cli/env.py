"""Environment commands: engram env create|list|use|delete."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from engram.cli.common import JsonOption, console, emit_json, service

app = typer.Typer(help="Environments isolate memories per project.", no_args_is_help=True)


@app.command()
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lowercase letters, digits, '_', '.', '-'.")],
    description: Annotated[str, typer.Option()] = "",
    use: Annotated[bool, typer.Option("--use", help="Make it the current environment.")] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Create an environment."""
    with service(ctx) as (engram, st):
        env = engram.environments.create(name, st.actor, description)
    if use:
        st.set_current_environment(env.name)
    if as_json:
        emit_json(env)
    else:
        console.print(f"created environment [bold]{env.name}[/bold] ({env.id})")


@app.command("list")
def list_(ctx: typer.Context, as_json: Annotated[bool, JsonOption] = False) -> None:
    """List your environments; the current one is marked with *."""
    with service(ctx) as (engram, st):
        envs = engram.environments.list(st.actor)
        current = st.current_environment(None) or "default"
    if as_json:
        emit_json(envs)
        return
    table = Table()
    for col in ("", "name", "id", "created", "description"):
        table.add_column(col)
    for env in envs:
        mark = "*" if current in (env.name, env.id) else ""
        table.add_row(mark, env.name, env.id, env.created_at.date().isoformat(), env.description)
    console.print(table)


@app.command()
def use(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Environment name or id.")],
) -> None:
    """Make an environment the current one for later commands."""
    with service(ctx) as (engram, st):
        env = engram.environments.resolve(name, st.actor)
    st.set_current_environment(env.name)
    console.print(f"now using [bold]{env.name}[/bold]")


@app.command()
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Environment name or id.")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Also remove its memories for good.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete an environment (refused while it holds memories, unless --purge)."""
    if purge and not yes:
        typer.confirm(f"Remove {name!r} and all its memories for good?", abort=True)
    with service(ctx) as (engram, st):
        env = engram.environments.delete(name, st.actor, purge=purge)
    if st.current_environment(None) in (env.name, env.id):
        st.set_current_environment(None)
    console.print(f"deleted environment {env.name}")
