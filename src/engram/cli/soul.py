"""Soul commands: engram soul show|edit|set|history|diff|restore|snapshot|preset.

Commands that change the Soul, and ``history``/``diff``, work on the global Soul unless ``--env``
names an environment, whose overrides they then address. ``show`` displays the effective Soul
of the current environment (global blocks with its overrides applied).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import click
import typer
from rich.table import Table

from engram.cli.common import JsonOption, console, emit_json, service, short
from engram.errors import InvalidInput
from engram.service.soul import DEFAULT_SOUL_TOKENS
from engram.soul.blocks import MAX_BLOCK_CHARS
from engram.soul.model import OverrideMode, Section, SoulBlock, SoulSnapshot

app = typer.Typer(
    help="The Soul: versioned identity blocks (soul, style, context) injected first into every "
    "context. Edits go to the global Soul unless --env names an environment to override.",
    no_args_is_help=True,
)

LayerOption = typer.Option(
    "--env",
    "-e",
    help="Edit this environment's overrides (name or id) instead of the global Soul.",
)


@app.command()
def show(
    ctx: typer.Context,
    block: Annotated[str | None, typer.Argument(help="One block: print its text.")] = None,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment (default: the current one)."),
    ] = None,
    xml: Annotated[bool, typer.Option("--xml", help="Print the Soul rendered as XML.")] = False,
    max_tokens: Annotated[int, typer.Option(help="Token budget of --xml.")] = DEFAULT_SOUL_TOKENS,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Show the effective Soul of an environment: every block, or one block's text."""
    with service(ctx) as (engram, st):
        where = st.current_environment(env)
        if xml:
            rendered = engram.soul.render(st.actor, where, max_tokens)
            if as_json:
                emit_json(rendered)
                return
            typer.echo(rendered.text)
            note = f"{rendered.tokens}/{rendered.max_tokens} tokens"
            if rendered.truncated:
                note += f"; truncated: {', '.join(rendered.truncated)}"
            if rendered.dropped:
                note += f"; dropped: {', '.join(rendered.dropped)}"
            typer.echo(note, err=True)
            return
        if block is not None:
            one = engram.soul.get_block(block, st.actor, where)
            emit_json(one) if as_json else typer.echo(one.text)
            return
        view = engram.soul.view(st.actor, where)
    if as_json:
        emit_json(view)
        return
    table = Table(title=f"Soul in {view.environment}")
    for col in ("section", "block", "prio", "on", "from", "text"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for b in view.blocks:
        table.add_row(
            b.section.value,
            b.name + (" *" if b.custom else ""),
            str(b.priority),
            "yes" if b.enabled else "no",
            b.source.value,
            short(b.text, 60),
        )
    console.print(table)


def _read_text(text: str | None, file: Path | None) -> str | None:
    if text is not None and file is not None:
        raise InvalidInput("give the text or --file, not both")
    if file is None:
        return text
    if str(file) == "-":
        return typer.get_text_stream("stdin").read()
    try:
        return file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read {file}: {exc.strerror}") from exc


def _saved(block: SoulBlock, as_json: bool) -> None:
    if as_json:
        emit_json(block)
        return
    where = block.environment_id or "global Soul"
    console.print(f"{block.name} ({where}) is now version {block.version}")


@app.command("set")
def set_(
    ctx: typer.Context,
    block: Annotated[str, typer.Argument(help="Block name (see 'engram soul show').")],
    text: Annotated[
        str | None, typer.Argument(help=f"New text, at most {MAX_BLOCK_CHARS} characters.")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the text from a file ('-': stdin).")
    ] = None,
    mode: Annotated[
        OverrideMode | None,
        typer.Option(help="With --env: replace or extend the global text, or inherit it again."),
    ] = None,
    priority: Annotated[
        int | None, typer.Option(help="0-100; higher survives longer when space is short.")
    ] = None,
    enabled: Annotated[
        bool | None, typer.Option("--enable/--disable", help="Include the block or not.")
    ] = None,
    section: Annotated[
        Section | None, typer.Option(help="Create a custom block in this section.")
    ] = None,
    reason: Annotated[str, typer.Option(help="Recorded in the history.")] = "",
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Set a block's text or settings; the old state stays in its history."""
    body = _read_text(text, file)
    with service(ctx) as (engram, st):
        saved = engram.soul.set_block(
            block,
            st.actor,
            body,
            environment=env,
            mode=mode,
            priority=priority,
            enabled=enabled,
            section=section,
            reason=reason,
        )
    _saved(saved, as_json)


@app.command()
def edit(
    ctx: typer.Context,
    block: Annotated[str, typer.Argument(help="Block name.")],
    mode: Annotated[
        OverrideMode | None,
        typer.Option(help="With --env: replace (default) or extend the global text."),
    ] = None,
    reason: Annotated[str, typer.Option(help="Recorded in the history.")] = "",
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Edit a block's text in $EDITOR (saved only if you change it)."""
    with service(ctx) as (engram, st):
        current = engram.soul.edit_start(block, st.actor, env, mode=mode)
        edited = click.edit(current, extension=".md", require_save=True)
        if edited is None or edited.strip() == current.strip():
            console.print("no change")
            return
        saved = engram.soul.set_block(
            block, st.actor, edited, environment=env, mode=mode, reason=reason
        )
    _saved(saved, as_json)


def _snapshot_table(snaps: list[SoulSnapshot]) -> Table:
    table = Table()
    for col in ("id", "kind", "at", "actor", "blocks", "label"):
        table.add_column(col, overflow="fold" if col == "id" else "ellipsis")
    for s in snaps:
        table.add_row(
            s.id,
            s.kind.value,
            s.created_at.isoformat(timespec="seconds"),
            s.actor or "",
            str(len(s.blocks)),
            s.label,
        )
    return table


@app.command()
def history(
    ctx: typer.Context,
    block: Annotated[
        str | None, typer.Argument(help="A block's versions; without it, the snapshots.")
    ] = None,
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Every version of a block, oldest first; or, without a block, every snapshot."""
    with service(ctx) as (engram, st):
        if block is None:
            snaps = engram.soul.snapshots(st.actor, env)
            emit_json(snaps) if as_json else console.print(_snapshot_table(snaps))
            return
        versions = engram.soul.history(block, st.actor, env)
    if as_json:
        emit_json(versions)
        return
    table = Table()
    for col in ("version", "action", "at", "actor", "mode", "prio", "on", "reason", "text"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for v in versions:
        s = v.state
        table.add_row(
            str(v.version),
            v.action.value,
            s.updated_at.isoformat(timespec="seconds") if s.updated_at else "",
            s.updated_by or "",
            s.mode.value,
            "" if s.priority is None else str(s.priority),
            "" if s.enabled is None else ("yes" if s.enabled else "no"),
            v.reason,
            short(s.text, 50),
        )
    console.print(table)


@app.command()
def diff(
    ctx: typer.Context,
    block: Annotated[str | None, typer.Argument(help="Block name.")] = None,
    from_version: Annotated[
        int | None, typer.Option("--from", help="Older version (default: the one before --to).")
    ] = None,
    to_version: Annotated[
        int | None, typer.Option("--to", help="Newer version (default: the latest).")
    ] = None,
    snapshot: Annotated[
        str | None, typer.Option(help="Compare a snapshot with now instead of a block.")
    ] = None,
    against: Annotated[
        str | None, typer.Option(help="With --snapshot: another snapshot instead of now.")
    ] = None,
    env: Annotated[str | None, LayerOption] = None,
) -> None:
    """Unified diff of a block between two versions, or of a snapshot against now."""
    if (block is None) == (snapshot is None):
        raise InvalidInput("give a block name or --snapshot ID")
    with service(ctx) as (engram, st):
        if snapshot is not None:
            out = engram.soul.diff_snapshot(snapshot, st.actor, against)
        else:
            assert block is not None
            out = engram.soul.diff(block, st.actor, from_version, to_version, env)
    typer.echo(out or "no differences")


@app.command()
def restore(
    ctx: typer.Context,
    block: Annotated[str | None, typer.Argument(help="Block name.")] = None,
    version: Annotated[int | None, typer.Option(help="The block version to bring back.")] = None,
    snapshot: Annotated[
        str | None, typer.Option(help="Restore the whole layer to this snapshot.")
    ] = None,
    reason: Annotated[str, typer.Option(help="Recorded in the history.")] = "",
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Restore a block to a version, or a layer to a snapshot (as new versions; the current
    state is snapshotted first)."""
    if snapshot is not None:
        if block is not None or version is not None:
            raise InvalidInput("--snapshot restores a whole layer: give no block or --version")
        with service(ctx) as (engram, st):
            update = engram.soul.restore_snapshot(snapshot, st.actor, reason)
        if as_json:
            emit_json(update)
        else:
            typer.echo(  # plain echo: rich would wrap the id
                f"restored {snapshot}: {len(update.changed)} blocks changed "
                f"(undo with 'engram soul restore --snapshot {update.backup.id}')"
            )
        return
    if block is None or version is None:
        raise InvalidInput("give a block and --version N, or --snapshot ID")
    with service(ctx) as (engram, st):
        saved = engram.soul.restore_block(block, version, st.actor, env, reason)
    _saved(saved, as_json)


@app.command()
def snapshot(
    ctx: typer.Context,
    label: Annotated[str, typer.Option(help="A note to recognise it by.")] = "",
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Record the whole Soul (or an environment's overrides) to restore later."""
    with service(ctx) as (engram, st):
        snap = engram.soul.snapshot(st.actor, env, label)
    if as_json:
        emit_json(snap)
    else:
        console.print(f"snapshot [bold]{snap.id}[/bold] ({len(snap.blocks)} blocks)")


@app.command()
def preset(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(help="balanced, creative, technical or mentor; omit to list them."),
    ] = None,
    env: Annotated[str | None, LayerOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Apply a preset (after an automatic snapshot), or list the presets."""
    with service(ctx) as (engram, st):
        if name is None:
            presets = engram.soul.presets()
            if as_json:
                emit_json(
                    [
                        {"name": p.name, "description": p.description, "blocks": dict(p.blocks)}
                        for p in presets
                    ]
                )
            else:
                for p in presets:
                    console.print(f"[bold]{p.name}[/bold]: {p.description}")
            return
        update = engram.soul.apply_preset(name, st.actor, env)
    if as_json:
        emit_json(update)
    else:
        names = ", ".join(b.name for b in update.changed) or "nothing"
        typer.echo(  # plain echo: rich would wrap the id
            f"applied {name}: changed {names} "
            f"(undo with 'engram soul restore --snapshot {update.backup.id}')"
        )
