"""Lifecycle commands: ``engram maintain``, ``engram undo`` and the ``engram review`` queue."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from engram.cli.common import EnvOption, JsonOption, console, emit_json, service, short
from engram.lifecycle.report import LifecycleEvent, MaintenanceReport
from engram.lifecycle.reviews import ReviewStatus
from engram.models import MemoryFilter, Status

review_app = typer.Typer(
    help="Pairs of memories that may contradict each other, waiting for a decision.",
    no_args_is_help=True,
)


def _events(title: str, events: list[LifecycleEvent], arrow: str) -> None:
    if not events:
        return
    table = Table(title=f"{title} ({len(events)})", title_justify="left")
    for col in ("memory", arrow, "reason"):
        table.add_column(col, overflow="fold")
    for e in events[:50]:
        other = e.other_id or _facts(e)
        table.add_row(e.memory_id, other, short(e.reason, 100))
    console.print(table)
    if len(events) > 50:
        console.print(f"… and {len(events) - 50} more (use --json for all)")


def _facts(e: LifecycleEvent) -> str:
    """A compaction's facts: the ids made (a dry run makes none: the text it would), then
    those reinforced."""
    made = e.created or [f"would make {short(text, 60)!r}" for text in e.new_facts]
    return ", ".join(made + [f"{i} (reinforced)" for i in e.reinforced])


def _print_report(report: MaintenanceReport) -> None:
    _events("merged", report.merged, "into")
    _events("superseded", report.superseded, "by")
    _events("queued for review", report.queued, "may contradict")
    _events("flagged", report.flagged, "")
    _events("compacted", report.compacted, "facts")
    verb = "would change" if report.dry_run else "changed"
    console.print(
        f"{verb}: {len(report.merged)} merged, {len(report.superseded)} superseded, "
        f"{len(report.queued)} queued, {len(report.flagged)} flagged, "
        f"{len(report.compacted)} compacted; {report.scanned} scanned in {report.seconds:.2f} s"
        + (" (dry run: nothing written)" if report.dry_run else "")
    )


def maintain(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would change; write nothing.")
    ] = False,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Merge duplicates, supersede contradicted facts, flag decayed memories, compact cold
    episodes. Every change is a version; undo one with 'engram undo ID'."""
    with service(ctx) as (engram, st):
        report = engram.lifecycle.maintain(st.actor, st.current_environment(env), dry_run=dry_run)
    if as_json:
        emit_json(report)
    else:
        _print_report(report)


def undo(
    ctx: typer.Context,
    memory_id: Annotated[
        str,
        typer.Argument(
            help="A merged or superseded memory (either side), a flagged or a compacted one."
        ),
    ],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Undo the lifecycle action on a memory, on both sides (see 'engram restore' for one)."""
    with service(ctx) as (engram, st):
        changed = engram.lifecycle.undo(memory_id, st.actor)
    if as_json:
        emit_json(changed)
    else:
        for m in changed:
            console.print(f"{m.id}: {m.status.value} (version {m.version})")


@review_app.command("list")
def review_list(
    ctx: typer.Context,
    status: Annotated[
        ReviewStatus | None, typer.Option(help="open (default), accepted, dismissed or closed.")
    ] = ReviewStatus.OPEN,
    all_: Annotated[bool, typer.Option("--all", help="Every status.")] = False,
    limit: Annotated[int, typer.Option(help="At most this many (1-1000).")] = 100,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List review items, oldest first."""
    with service(ctx) as (engram, st):
        env_ref = st.current_environment(env)
        items = engram.lifecycle.reviews(
            st.actor, env_ref, status=None if all_ else status, limit=limit
        )
        ids = [i for r in items for i in (r.memory_id, r.other_id)]
        page = engram.memories.list_memories(
            st.actor,
            MemoryFilter(ids=ids, statuses=list(Status)),
            environment=env_ref,
            limit=max(1, min(len(ids), 1000)),
        )
        found = {m.id: m for m in page.items}
    if as_json:
        emit_json(items)
        return
    table = Table()
    for col in ("id", "status", "newer", "older", "reason"):
        table.add_column(col, overflow="fold")
    for r in items:
        newer, older = found.get(r.memory_id), found.get(r.other_id)
        table.add_row(
            r.id,
            r.status.value,
            short(newer.content, 50) if newer else r.memory_id,
            short(older.content, 50) if older else r.other_id,
            short(r.reason, 60),
        )
    console.print(table)
    console.print(f"{len(items)} items")


@review_app.command("accept")
def review_accept(
    ctx: typer.Context,
    review_id: Annotated[str, typer.Argument(help="Review item id.")],
    note: Annotated[str, typer.Option(help="Recorded with the decision.")] = "",
) -> None:
    """The newer memory supersedes the older one."""
    with service(ctx) as (engram, st):
        item = engram.lifecycle.resolve_review(review_id, st.actor, accept=True, note=note)
    console.print(f"accepted {item.id}: {item.memory_id} supersedes {item.other_id}")


@review_app.command("dismiss")
def review_dismiss(
    ctx: typer.Context,
    review_id: Annotated[str, typer.Argument(help="Review item id.")],
    note: Annotated[str, typer.Option(help="Recorded with the decision.")] = "",
) -> None:
    """Both memories stay; the pair is not queued again."""
    with service(ctx) as (engram, st):
        item = engram.lifecycle.resolve_review(review_id, st.actor, accept=False, note=note)
    console.print(f"dismissed {item.id}")


def register(app: typer.Typer) -> None:
    app.command()(maintain)
    app.command()(undo)
    app.add_typer(review_app, name="review")
