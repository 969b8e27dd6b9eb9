"""Handoff commands: engram handoff begin|list|show|accept|cancel.

A handoff says where the work stands for the next session in a project, whichever agent runs
it; the hooks make one when a session ends and deliver it at the next session start. These
commands leave one by hand, list yours, and claim or withdraw one."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Annotated

import typer

from engram.cli.common import EnvOption, JsonOption, console, emit_json, service, short
from engram.cli.tables import memory_table
from engram.handoffs import Handoff, HandoffState
from engram.service.handoffs import render

app = typer.Typer(
    help="Handoffs: where the work stands, for the next session in a project (any agent). "
    "Claimed exactly once; only you (and a user you address one to) see yours.",
    no_args_is_help=True,
)


def _show(h: Handoff) -> None:
    typer.echo(render(h, datetime.now(UTC)).replace(" (accepted for this session)", ""))
    typer.echo(f"state: {h.state.value}" + (f" by {h.accepted_agent}" if h.accepted_agent else ""))


@app.command()
def begin(
    ctx: typer.Context,
    summary: Annotated[str, typer.Argument(help="What was done, what failed, where it stands.")],
    next_step: Annotated[
        list[str] | None, typer.Option("--next", help="A next step. Repeat for several.")
    ] = None,
    question: Annotated[
        list[str] | None, typer.Option("--question", help="An open question. Repeat for several.")
    ] = None,
    file: Annotated[
        list[str] | None, typer.Option("--file", help="A file touched. Repeat for several.")
    ] = None,
    from_agent: Annotated[str, typer.Option("--from", help="Who leaves it.")] = "cli",
    for_agent: Annotated[
        str | None, typer.Option("--for-agent", help="Deliver it only to this agent.")
    ] = None,
    for_user: Annotated[
        str | None, typer.Option("--for-user", help="Address it to this user (id or name).")
    ] = None,
    cwd: Annotated[
        str | None, typer.Option(help="The working directory (default: this one).")
    ] = None,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Leave a handoff for the next session in this project."""
    with service(ctx) as (engram, st):
        h = engram.handoffs.begin(
            summary,
            st.actor,
            environment=st.current_environment(env),
            cwd=os.getcwd() if cwd is None else cwd,
            from_agent=from_agent,
            for_agent=for_agent,
            for_user=for_user,
            open_questions=question or [],
            next_steps=next_step or [],
            files_touched=file or [],
        )
    emit_json(h) if as_json else typer.echo(h.id)


@app.command("list")
def list_(
    ctx: typer.Context,
    state: Annotated[
        list[HandoffState] | None, typer.Option(help="Repeat for several; default: open.")
    ] = None,
    env: Annotated[
        str | None, typer.Option("--env", "-e", help="Only this environment (default: every one).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 20,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Your handoffs and those addressed to you, newest first."""
    with service(ctx) as (engram, st):
        found = engram.handoffs.list(
            st.actor, environment=env, states=state or [HandoffState.OPEN], limit=limit
        )
        projects = {
            e.id: engram.environments.label(e, st.actor) for e in engram.environments.list(st.actor)
        }
    if as_json:
        emit_json(found)
        return
    if not found:
        console.print(f"no handoffs ({', '.join(s.value for s in state or [HandoffState.OPEN])})")
        return
    rows = [
        {
            "id": h.id,
            "project": projects.get(h.environment_id, h.environment_id),
            "state": h.state.value,
            "from": f"{h.from_agent} ({'auto' if h.automatic else 'manual'})",
            "left": f"{h.created_at:%Y-%m-%d %H:%M}",
            "where": h.cwd,
            "summary": short(h.summary, 60),
        }
        for h in found
    ]
    # every project's by default: each row says whose
    wide = ("id", "project", "state", "from", "left", "where", "summary")
    narrow = ("id", "project", "state", "summary")
    table = memory_table(rows, wide, narrow, title="Handoffs", fold="summary")
    console.print(table)


@app.command()
def show(
    ctx: typer.Context,
    handoff_id: Annotated[str, typer.Argument(help="hof_…")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """One handoff, whole (claims nothing)."""
    with service(ctx) as (engram, st):
        h = engram.handoffs.get(handoff_id, st.actor)
    emit_json(h) if as_json else _show(h)


@app.command()
def accept(
    ctx: typer.Context,
    handoff_id: Annotated[str, typer.Argument(help="hof_…")],
    agent: Annotated[str, typer.Option(help="Who accepts it.")] = "cli",
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Claim a handoff (exactly once: if it was taken, says by whom and when)."""
    with service(ctx) as (engram, st):
        h = engram.handoffs.accept(handoff_id, st.actor, agent=agent)
    emit_json(h) if as_json else _show(h)


@app.command()
def cancel(
    ctx: typer.Context,
    handoff_id: Annotated[str, typer.Argument(help="hof_…")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Withdraw an open handoff you left (it will not be delivered)."""
    with service(ctx) as (engram, st):
        h = engram.handoffs.cancel(handoff_id, st.actor)
    emit_json(h) if as_json else typer.echo(f"{h.id} cancelled")
