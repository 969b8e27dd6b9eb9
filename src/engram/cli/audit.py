"""engram audit: query the log of every mutation."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from engram.accounts import AuditQuery
from engram.cli.common import JsonOption, console, emit_json, service, short, user_id


def audit(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option(help="Only this user's changes (their name or id).")
    ] = None,
    key: Annotated[str | None, typer.Option(help="Only changes made with this key.")] = None,
    interface: Annotated[str | None, typer.Option(help="local, api, mcp...")] = None,
    action: Annotated[
        str | None, typer.Option(help="e.g. memory.update, or a prefix such as 'memory.'.")
    ] = None,
    environment: Annotated[str | None, typer.Option("--env", help="Environment id.")] = None,
    target: Annotated[str | None, typer.Option(help="A memory, key, user or env id.")] = None,
    since: Annotated[datetime | None, typer.Option()] = None,
    until: Annotated[datetime | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option()] = 50,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Show audit entries, newest first."""
    with service(ctx) as (engram, st):
        who = None if user is None else user_id(engram, user, st.actor, gone=True)
        q = AuditQuery(
            user_id=who,
            key_id=key,
            interface=interface,
            action=action,
            environment_id=environment,
            target=target,
            since=since,
            until=until,
            limit=limit,
        )
        entries = engram.audit.query(q, st.actor)
    if as_json:
        emit_json(entries)
        return
    table = Table()
    for col in ("when", "who", "via", "action", "targets"):
        table.add_column(col, overflow="fold" if col == "targets" else "ellipsis")
    for e in entries:
        who = e.user_id if e.key_id is None else f"{e.user_id}/{e.key_id}"
        changes = ", ".join(f"{t} {e.before.get(t)}→{e.after.get(t)}" for t in e.targets)
        table.add_row(
            e.at.isoformat(timespec="seconds"), who, e.interface, e.action, short(changes, 120)
        )
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)
