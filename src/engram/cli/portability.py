"""``engram import`` (other products' exports and Engram archives) and ``engram export``."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from engram.actors import Actor
from engram.cli.common import EnvOption, JsonOption, console, emit_json, service
from engram.cli.memories import redacted
from engram.errors import Conflict, InvalidInput, MissingDependency
from engram.models import Layer, MemoryFilter, Status
from engram.portability.archive import read as read_archive
from engram.portability.bundle import from_iso
from engram.portability.detect import is_archive, read_bundle
from engram.portability.reading import Entry, read_input
from engram.portability.report import ImportPreview, ImportReport
from engram.portability.tabular import parse_mapping
from engram.private_files import open_private
from engram.service import Engram


def import_(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A file, zip or folder (or a Claude manifest).")],
    preview: Annotated[
        bool, typer.Option("--preview", help="Show what would arrive; store nothing.")
    ] = False,
    env: Annotated[str | None, EnvOption] = None,
    mapping: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="CSV: COLUMN=FIELD (content, layer, category, importance, "
            "confidence, tags, created_at, environment). Repeatable.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Archive: restore into a non-empty home (keeps what exists; a failed restore "
            "changes nothing).",
        ),
    ] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Import an export, detected by its content: ChatGPT (zip, conversations.json or its
    shards), Claude.ai (the legacy zip or the 2026 manifest with per-category zips; projects
    become environments), Google Takeout My Activity for Gemini (JSON or HTML), a CSV of
    memories, a list of '[YYYY-MM-DD] - text' memories, Claude Code / Codex / Gemini CLI
    session transcripts. Conversations go through extraction and memories through the
    lifecycle, as live data does. Importing the same export again adds nothing; an interrupted
    import picks up where it stopped. An Engram archive (engram export --archive) is restored
    as it was, into an empty home, whole or not at all."""
    with service(ctx) as (engram, st):
        target = st.current_environment(env)
        entries = read_input(path)
        if is_archive(entries):
            _restore(engram, entries, st.actor, force=force, preview=preview, as_json=as_json)
            return
        bundle = read_bundle(entries, parse_mapping(mapping or []))
        if preview:
            shown = engram.imports.preview(bundle, st.actor, target, file=str(path))
            emit_json(shown) if as_json else _print_preview(shown)
            return
        with Progress(
            TextColumn("importing"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
            disable=as_json,
            transient=True,
        ) as bar:
            task = bar.add_task("import", total=None, rate="")

            def progress(done: int, total: int) -> None:
                elapsed = bar.tasks[0].elapsed or 0.0
                rate = f"{done / elapsed:.0f} items/s" if elapsed > 0 and done else ""
                bar.update(task, completed=done, total=total, rate=rate)

            report = engram.imports.commit(
                bundle, st.actor, target, file=str(path), progress=progress
            )
        emit_json(report) if as_json else _print_report(report)


def _restore(
    engram: Engram, entries: list[Entry], actor: Actor, *, force: bool, preview: bool, as_json: bool
) -> None:
    if preview:
        manifest, _ = read_archive(entries)
        emit_json(manifest) if as_json else console.print_json(data=manifest)
        return
    try:
        report = engram.archive.restore(entries, actor, force=force)
    except Conflict as exc:
        if "memories" not in exc.details:  # not the refusal of a non-empty home
            raise
        raise Conflict(
            f"{exc.message} (`engram --home NEW_DIR import ARCHIVE` makes one: no `engram init` "
            "before it; --force adds the archive to this home, keeping what exists)",
            **exc.details,
        ) from None
    if as_json:
        emit_json({"counts": report.counts, "checks": report.checks})
        return
    # a restore that would not verify is refused whole (nothing written); with --force the
    # home may hold more than the archive: a collection then differs
    for name, count in report.counts.items():
        mark = "ok" if report.checks.get(name) else "differs (kept what existed)"
        console.print(f"{name:<16} {count:>8}  {mark}")
    bad = [n for n, ok in report.checks.items() if not ok]
    console.print("restored and verified" if not bad else "restored beside what this home held")


def export(
    ctx: typer.Context,
    output: Annotated[Path, typer.Argument(help="The file to write ('-' for standard output).")],
    what: Annotated[
        str, typer.Option("--what", help="memories, conversations or soul.")
    ] = "memories",
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="memories: json, markdown, xlsx, docx, pdf, vault (OUTPUT is a folder: a "
            "Markdown file per memory, see engram sync); conversations: markdown, docx, pdf; "
            "soul: json, markdown. Default: from the file's suffix.",
        ),
    ] = "",
    env: Annotated[
        str | None, typer.Option("--env", "-e", help="One environment (default: all yours).")
    ] = None,
    layer: Annotated[list[Layer] | None, typer.Option("--layer", help="Repeatable.")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="Repeatable.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Created on or after (ISO).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Created before (ISO).")] = None,
    include_deleted: Annotated[
        bool, typer.Option("--all-statuses", help="Also deleted, merged, superseded…")
    ] = False,
    archive_: Annotated[
        bool,
        typer.Option(
            "--archive",
            help="Everything (environments, memories with every version, Soul with history and "
            "snapshots, conversations, reviews, audit, the import ledger) as an Engram archive.",
        ),
    ] = False,
    account: Annotated[
        str | None,
        typer.Option(
            "--account", help="Archive of one user's data across environments (their id or name)."
        ),
    ] = None,
    vectors: Annotated[bool, typer.Option("--vectors", help="Archive: include vectors.")] = False,
) -> None:
    """Export memories, conversations or the Soul as documents, or everything as an archive
    (a zip of JSON Lines with a manifest of per-collection SHA-256 checksums; see the README).
    """
    if str(output) != "-":
        _writable(output, folder=fmt == "vault")
    if fmt == "vault":
        with service(ctx) as (engram, st):
            target = st.current_environment(env) if env else None
            report = engram.vault.export(output, st.actor, target)
        changed = len(report.written)
        console.print(
            f"wrote the vault {output} ({changed} file{'' if changed == 1 else 's'} changed)"
        )
        return
    with service(ctx) as (engram, st):
        if archive_ or account:
            data = engram.archive.export(st.actor, account=account, vectors=vectors)
        else:
            fmt = fmt or _FORMATS.get(output.suffix.lower(), "")
            if not fmt:
                raise InvalidInput(f"name a --format (the suffix {output.suffix!r} says none)")
            target = st.current_environment(env) if env else None
            if what == "memories":
                flt = MemoryFilter(
                    layers=layer or [],
                    categories=category or [],
                    statuses=list(Status) if include_deleted else [Status.ACTIVE],
                    created_after=_date(since, "--since"),
                    created_before=_date(until, "--until"),
                )
                data = engram.exports.memories(fmt, st.actor, target, flt)
            elif what == "conversations":
                data = engram.exports.conversations(fmt, st.actor, target)
            elif what == "soul":
                data = engram.exports.soul(fmt, st.actor, target)
            else:
                raise InvalidInput(f"--what is memories, conversations or soul; got {what!r}")
    if str(output) == "-":
        sys.stdout.buffer.write(data)
        return
    # owner-only, as a backup is: an export is the user's memories (an archive: every user's)
    with open_private(output) as out:
        out.write(data)
    console.print(f"wrote {output} ({len(data)} bytes)")


def _writable(output: Path, *, folder: bool) -> None:
    """Refuse an output the export could not be written to, before anything is read."""
    parent = output.parent
    if not parent.is_dir():
        raise InvalidInput(f"cannot write {output}: the folder {parent} does not exist")
    if folder and output.exists() and not output.is_dir():
        raise InvalidInput(f"cannot write a vault into {output}: it is a file, not a folder")
    if not folder and output.is_dir():
        raise InvalidInput(f"cannot write {output}: it is a folder; name a file")


_FORMATS = {
    ".json": "json",
    ".md": "markdown",
    ".markdown": "markdown",
    ".xlsx": "xlsx",
    ".docx": "docx",
    ".pdf": "pdf",
}


def _date(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    parsed = from_iso(value)
    if parsed is None:
        raise InvalidInput(f"{option} {value!r} is not an ISO date (YYYY-MM-DD)")
    return parsed


def _print_preview(p: ImportPreview) -> None:
    console.print(f"[bold]{p.file}[/bold]: {', '.join(p.formats)} → environment {p.environment}")
    table = Table(title="would import (preview: nothing stored)")
    for col in ("source", "conversations", "messages", "memories", "environments"):
        table.add_column(col, justify="left" if col == "source" else "right")
    for s in p.sources:
        table.add_row(
            s.format, str(s.conversations), str(s.messages), str(s.memories), str(s.environments)
        )
    console.print(table)
    d = p.duplicates
    console.print(
        f"already stored: {d.conversations} conversations, {d.messages} messages, "
        f"{d.memories} memories"
    )
    if p.new_environments:
        console.print("new environments: " + ", ".join(p.new_environments))
    for line in p.sample:
        console.print(f"  · {line}", markup=False)
    if p.skipped_total:
        console.print(f"skipped {p.skipped_total}:")
        for item in p.skipped[:20]:
            console.print(f"  - {item.entry}: {item.reason}", markup=False)


def _print_report(r: ImportReport) -> None:
    console.print(
        f"imported {', '.join(r.formats)} into {r.environment}: {r.conversations} conversations "
        f"({r.messages_added} new messages), memories: {r.memories_created} created, "
        f"{r.memories_merged} merged, {r.memories_superseded} superseding, "
        f"{r.memories_outdated} outdated, "
        f"{r.memories_queued} queued for review; {r.already_imported} already imported, "
        f"{r.skipped_total} skipped"
    )
    if r.environments_created:
        console.print("environments created: " + ", ".join(r.environments_created))
    if r.redactions:
        console.print(f"redacted before storing: {redacted(r.redactions)} (rotate them)")


def sync(
    ctx: typer.Context,
    folder: Annotated[Path, typer.Argument(help="A vault written by engram export -f vault.")],
    watch: Annotated[
        bool,
        typer.Option(
            "--watch", help="Keep syncing: on every file change, and every --every seconds."
        ),
    ] = False,
    every: Annotated[
        float, typer.Option("--every", min=0.5, help="--watch: seconds between syncs.")
    ] = 10.0,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Sync a Markdown vault both ways: an edited file becomes a new version ("edited in the
    vault"), a deleted file a soft delete, a new file (in a layer folder) a new memory through
    the lifecycle; memories changed in Engram are written to their files. When a file and its
    memory both changed, nothing is overwritten: Engram's version goes in the file, the edit is
    kept as <id>.conflict.md, and the conflict is reported. A file that cannot be read back is
    reported and left as it is, and the sync exits 1 (without --watch), so that a cron job or
    a git hook sees it. --watch needs the 'vault' extra (watchfiles)."""
    with service(ctx) as (engram, st):
        report = engram.vault.sync(folder, st.actor)
        _print_sync(report.as_dict(), as_json)
        if not watch:
            if report.errors:
                raise typer.Exit(1)
            return
        try:
            import watchfiles
        except ImportError as exc:
            raise MissingDependency.extra("engram sync --watch (watchfiles)", "vault") from exc
        console.print(f"watching {folder} (Ctrl-C to stop)")
        for _ in watchfiles.watch(
            folder,
            watch_filter=lambda _change, path: path.endswith(".md"),
            rust_timeout=int(every * 1000),
            yield_on_timeout=True,
        ):
            _print_sync(engram.vault.sync(folder, st.actor).as_dict(), as_json, quiet=True)


def _print_sync(report: dict[str, list[str]], as_json: bool, *, quiet: bool = False) -> None:
    if as_json:
        emit_json(report)
        return
    if quiet and not any(report.values()):
        return
    counts = ", ".join(f"{len(v)} {k}" for k, v in report.items() if k not in _DETAIL and v)
    console.print(f"synced: {counts or 'nothing to do'}")
    for kind in _DETAIL:
        for line in report[kind]:
            console.print(f"  {kind[:-1]}: {line}", markup=False)


_DETAIL = ("conflicts", "errors")


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
    app.command("export")(export)
    app.command("sync")(sync)
