"""Environment commands: engram env create|list|use|which|delete|members|share|unshare."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from engram.accounts import Role
from engram.cli.common import JsonOption, console, emit_json, service, state, user_id

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
        current = st.current_environment(None) or st.actor.project or "default"
    if as_json:
        emit_json(envs)
        return
    table = Table()
    for col in ("", "name", "id", "created", "description"):
        # an id is never cut (REST and the SDK take it): the description wraps instead
        table.add_column(col, no_wrap=col == "id", min_width=30 if col == "id" else None)
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
        # as the user names it to write there: its name, or owner/name of a shared one
        label = engram.environments.label(env, st.actor)
    st.set_current_environment(label)
    console.print(f"now using [bold]{label}[/bold]")
    if st.actor.project or st.env_override:
        console.print(
            f"note: here commands use {st.choice.describe()}; 'env use' applies where "
            "neither ENGRAM_ENV nor a project (.engram.toml or a git repository) chooses"
        )


@app.command()
def which(ctx: typer.Context, as_json: Annotated[bool, JsonOption] = False) -> None:
    """Which environment commands here use, and which rule chose it: --env, then ENGRAM_ENV,
    then the project of the working directory (its .engram.toml names or pins one, else the git
    root's directory name; created on first use), then the one chosen with 'env use', then
    'default'. 'engram mcp' and the capture hooks follow the same rule."""
    st = state(ctx)
    choice = st.choice
    name, source = choice.ref, choice.source
    if name is None:
        name = st.chosen_environment()
        source = "env use" if name else "default"
    if as_json:
        root = str(choice.root) if choice.root else None
        emit_json({"environment": name or "default", "source": source, "root": root})
        return
    where = f" at {choice.root}" if choice.root else ""
    console.print(f"[bold]{name or 'default'}[/bold] (from {source}{where})")


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


@app.command()
def members(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Environment name, owner/name or id.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Who has access to an environment and with which role, the owner first."""
    with service(ctx) as (engram, st):
        found = engram.environments.members(name, st.actor)
        names = engram.accounts.names(m.user_id for m in found)
    if as_json:
        emit_json(found)
        return
    table = Table()
    for col in ("user", "id", "role", "since"):
        table.add_column(col)
    for m in found:
        since = m.added_at.date().isoformat()
        table.add_row(names.get(m.user_id, m.user_id), m.user_id, m.role.value, since)
    console.print(table)


@app.command()
def share(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Your environment: its name or id.")],
    user: Annotated[str, typer.Argument(help="The user's name or id ('engram users list').")],
    role: Annotated[
        Role,
        typer.Option(
            help="reader: search and read; writer: also add and change memories; owner: also "
            "share and delete it. Sharing again changes the role."
        ),
    ] = Role.READER,
) -> None:
    """Share an environment with another user (owners only). To write to it they name it
    OWNER/NAME (your user name, then its name) or by its id: a bare NAME means their own."""
    with service(ctx) as (engram, st):
        member = engram.environments.share(name, user_id(engram, user, st.actor), role, st.actor)
        env = engram.environments.resolve(member.environment_id, st.actor)
    console.print(f"{user} is now {member.role.value} of {env.name} ({env.id})")


@app.command()
def unshare(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Environment name, owner/name or id.")],
    user: Annotated[str, typer.Argument(help="The member's name or id.")],
) -> None:
    """Take a member's access away (owners only; anyone may leave one shared with them)."""
    with service(ctx) as (engram, st):
        member = engram.environments.unshare(name, user_id(engram, user, st.actor), st.actor)
    console.print(f"{user} no longer has access ({member.role.value} until now)")
