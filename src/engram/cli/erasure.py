"""``engram conversations delete`` and the report every deletion prints (also used by
``engram users delete``)."""

from __future__ import annotations

from typing import Annotated

import typer

from engram.cli.common import JsonOption, console, emit_json, service
from engram.erasure import Erased

app = typer.Typer(help="Stored conversations: delete them for good.", no_args_is_help=True)


@app.command("delete")
def delete(
    ctx: typer.Context,
    conversation: Annotated[str, typer.Argument(help="A 'cnv_…' id or your own id for it.")],
    purge: Annotated[
        bool, typer.Option("--purge", help="Also remove the memories extracted from it.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Delete a conversation and its messages for good; with --purge, also every memory
    extracted from it (all versions). Not restorable."""
    if not yes:
        what = " and the memories extracted from it" if purge else ""
        typer.confirm(f"Remove conversation {conversation!r}{what} for good?", abort=True)
    with service(ctx) as (engram, st):
        erased = engram.erasure.delete_conversation(conversation, st.actor, purge=purge)
    print_erased(erased, as_json)


def print_erased(erased: Erased, as_json: bool) -> None:
    if as_json:
        emit_json(erased)
        return
    removed = ", ".join(f"{n} {kind}" for kind, n in erased.removed.items() if n)
    console.print(f"removed for good: {removed or 'nothing'}", markup=False)
    console.print("kept: " + "; ".join(erased.kept), markup=False)
