"""Memory commands: add, list, show, edit, delete, restore, history, purge."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from engram.cli.common import EnvOption, JsonOption, console, emit_json, service, short
from engram.cli.tables import memory_table
from engram.lifecycle.report import WriteAction
from engram.models import (
    ORDERS,
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    ProcedureDetails,
    Source,
    Status,
)


def _memory_table(memories: list[Memory], title: str | None = None) -> Table:
    rows = [
        {
            "id": m.id,
            "layer": m.layer.value,
            "category": m.category,
            "imp": f"{m.importance:.2f}",
            "conf": f"{m.confidence:.2f}",
            "status": m.status.value,
            "content": short(
                m.content if m.procedure is None else f"{m.procedure.name}: {m.content}"
            ),
        }
        for m in memories
    ]
    wide = ("id", "layer", "category", "imp", "conf", "status", "content")
    # narrow: the status only when some memory listed is not active
    mixed = any(m.status is not Status.ACTIVE for m in memories)
    narrow = ("id", "imp", "status", "content") if mixed else ("id", "imp", "content")
    return memory_table(rows, wide, narrow, title=title)


def _show(memory: Memory) -> None:
    table = Table(show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    data = memory.model_dump(mode="json", exclude_none=True)
    for key, value in data.items():
        table.add_row(key, str(value))
    console.print(table)


def add(
    ctx: typer.Context,
    content: Annotated[str, typer.Argument(help="The memory's text (an episode's summary).")],
    layer: Annotated[Layer, typer.Option(help="fact, episode or procedure.")] = Layer.FACT,
    category: Annotated[
        str, typer.Option(help="preference, fact, decision, project, general, or your own.")
    ] = "general",
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Repeatable.")] = None,
    importance: Annotated[float, typer.Option(help="0-1: 0.9+ critical, <0.5 minor.")] = 0.5,
    confidence: Annotated[float, typer.Option(help="0-1: how sure this is true.")] = 0.8,
    source: Annotated[Source, typer.Option(help="Where it came from.")] = Source.MANUAL,
    pin: Annotated[bool, typer.Option("--pin", help="Exempt from decay.")] = False,
    name: Annotated[str | None, typer.Option(help="Procedure: its name.")] = None,
    trigger: Annotated[str, typer.Option(help="Procedure: when to use it.")] = "",
    step: Annotated[list[str] | None, typer.Option("--step", help="Procedure step.")] = None,
    participant: Annotated[
        list[str] | None, typer.Option("--participant", help="Episode participant.")
    ] = None,
    decision: Annotated[
        list[str] | None, typer.Option("--decision", help="Episode key decision.")
    ] = None,
    thread: Annotated[
        str | None,
        typer.Option(help="The conversation or session it came from (search groups by it)."),
    ] = None,
    exact: Annotated[
        bool,
        typer.Option("--exact", help="Store exactly as given: no dedup or contradiction check."),
    ] = False,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Store a new memory. A fact goes through dedup and contradiction: a duplicate is merged
    into the fact it repeats, a contradicted fact is superseded, an unclear conflict is queued
    for review (`engram review list`); the output says which. `--exact` stores it as given."""
    procedure = episode = None
    if layer is Layer.PROCEDURE:
        procedure = ProcedureDetails(name=name or content[:80], trigger=trigger, steps=step or [])
    elif layer is Layer.EPISODE:
        episode = EpisodeDetails(participants=participant or [], key_decisions=decision or [])
    new = NewMemory(
        layer=layer,
        content=content,
        category=category,
        tags=tag or [],
        importance=importance,
        confidence=confidence,
        source=source,
        pinned=pin,
        procedure=procedure,
        episode=episode,
        thread=thread,
        lifecycle=not exact,
    )
    with service(ctx) as (engram, st):
        out = engram.lifecycle.remember(new, st.actor, st.current_environment(env))
    if as_json:
        emit_json(out.stored())
        return
    kind = out.memory.layer.value
    if out.action is WriteAction.MERGED:
        console.print(
            f"merged into {kind} [bold]{out.absorbed_into}[/bold] (kept as {out.merged_record}; "
            f"{escape(out.reason)})"
        )
    elif out.action is WriteAction.SUPERSEDED:
        console.print(
            f"stored {kind} [bold]{out.memory.id}[/bold], superseding {out.superseded} "
            f"({out.reason})"
        )
    elif out.action is WriteAction.OUTDATED:
        console.print(
            f"stored {kind} [bold]{out.memory.id}[/bold] as history: {escape(out.reason)}"
        )
    elif out.action is WriteAction.QUEUED:
        console.print(
            f"stored {kind} [bold]{out.memory.id}[/bold]; queued for review as {out.review_id} "
            f"({out.reason})"
        )
    else:
        console.print(f"stored {kind} [bold]{out.memory.id}[/bold]")
    if out.redactions:
        console.print(f"redacted before storing: {redacted(out.redactions)}")


def redacted(counts: dict[str, int]) -> str:
    """What the scrubber removed, by kind: '1 aws_access_key, 2 github_token'."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def list_(
    ctx: typer.Context,
    layer: Annotated[list[Layer] | None, typer.Option("--layer", "-l")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", "-c")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="All must match.")] = None,
    thread: Annotated[
        list[str] | None, typer.Option("--thread", help="From this conversation or session.")
    ] = None,
    status: Annotated[
        list[Status] | None, typer.Option("--status", "-s", help="Default: active.")
    ] = None,
    since: Annotated[datetime | None, typer.Option(help="Created at or after.")] = None,
    until: Annotated[datetime | None, typer.Option(help="Created before.")] = None,
    min_importance: Annotated[float | None, typer.Option()] = None,
    max_importance: Annotated[float | None, typer.Option()] = None,
    limit: Annotated[int, typer.Option(help="At most this many (1-1000).")] = 50,
    offset: Annotated[int, typer.Option()] = 0,
    order: Annotated[str, typer.Option(help=", ".join(ORDERS))] = "-updated_at",
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List memories in an environment, newest first."""
    flt = MemoryFilter(
        layers=layer or [],
        categories=category or [],
        tags=tag or [],
        threads=thread or [],
        statuses=status or [Status.ACTIVE],
        created_after=since,
        created_before=until,
        min_importance=min_importance,
        max_importance=max_importance,
    )
    with service(ctx) as (engram, st):
        page = engram.memories.list_memories(
            st.actor,
            flt,
            environment=st.current_environment(env),
            limit=limit,
            offset=offset,
            order=order,
        )
    if as_json:
        emit_json(page)
        return
    console.print(_memory_table(page.items))
    console.print(f"{len(page.items)} of {page.total}")


def show(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Show one memory with every field."""
    with service(ctx) as (engram, st):
        memory = engram.memories.get(memory_id, st.actor)
    if as_json:
        emit_json(memory)
    else:
        _show(memory)


def edit(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    content: Annotated[str | None, typer.Option()] = None,
    category: Annotated[str | None, typer.Option()] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", "-t", help="Replaces all tags; repeatable.")
    ] = None,
    importance: Annotated[float | None, typer.Option()] = None,
    confidence: Annotated[float | None, typer.Option()] = None,
    pin: Annotated[bool | None, typer.Option("--pin/--unpin")] = None,
    reason: Annotated[str, typer.Option(help="Recorded in the history.")] = "",
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Change a memory; the previous state stays in its history."""
    patch = MemoryPatch(
        content=content,
        category=category,
        tags=tag,
        importance=importance,
        confidence=confidence,
        pinned=pin,
    )
    if not patch.changes():
        raise typer.BadParameter("nothing to change: give at least one option")
    with service(ctx) as (engram, st):
        memory = engram.memories.update(memory_id, patch, st.actor, reason)
    if as_json:
        emit_json(memory)
    else:
        console.print(f"updated {memory.id} (version {memory.version})")
        if memory.redactions:
            console.print(f"redacted before storing: {redacted(memory.redactions)}")


def delete(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(help="Memory ids.")],
    reason: Annotated[str, typer.Option()] = "",
) -> None:
    """Delete memories (restorable with 'engram restore')."""
    with service(ctx) as (engram, st):
        deleted = engram.memories.delete_many(memory_ids, st.actor, reason)
    console.print(f"deleted {len(deleted)} (restore with 'engram restore ID')")


def restore(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    version: Annotated[
        int | None, typer.Option(help="Version to bring back (default: last active state).")
    ] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Restore a deleted memory, or any memory to an earlier version."""
    with service(ctx) as (engram, st):
        memory = engram.memories.restore(memory_id, st.actor, version)
    if as_json:
        emit_json(memory)
    else:
        console.print(f"restored {memory.id} (now version {memory.version})")


def history(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(help="Memory id.")],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Every version of a memory, oldest first."""
    with service(ctx) as (engram, st):
        versions = engram.memories.history(memory_id, st.actor)
    if as_json:
        emit_json(versions)
        return
    table = Table()
    for col in ("version", "action", "at", "actor", "status", "reason", "content"):
        # a reason names other memories by id and a time is read whole: folded, never cut
        table.add_column(col, overflow="fold" if col in ("reason", "content", "at") else "ellipsis")
    for v in versions:
        table.add_row(
            str(v.version),
            v.action.value,
            v.at.isoformat(timespec="seconds"),
            v.actor or "",
            v.snapshot.status.value,
            v.reason,
            short(v.snapshot.content, 60),
        )
    console.print(table)


def purge(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(help="Memory ids.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Remove memories for good, with their history, index entries and vectors."""
    if not yes:
        typer.confirm(
            f"Purge {len(memory_ids)} memories for good? This cannot be undone", abort=True
        )
    with service(ctx) as (engram, st):
        n = engram.memories.purge(memory_ids, st.actor)
    console.print(f"purged {n}")


def register(app: typer.Typer) -> None:
    app.command()(add)
    app.command("list")(list_)
    app.command()(show)
    app.command()(edit)
    app.command()(delete)
    app.command()(restore)
    app.command()(history)
    app.command()(purge)
