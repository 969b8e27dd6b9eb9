"""engram migrate-store: copy every collection from one store to another and verify it."""

from __future__ import annotations

from typing import Annotated

import typer

from engram.cli.common import console
from engram.errors import StorageError
from engram.store import open_store
from engram.store.copy import copy_store


def migrate_store(
    source: Annotated[str, typer.Option("--from", help="sqlite:///path or postgresql://…")],
    dest: Annotated[str, typer.Option("--to", help="sqlite:///path or postgresql://…")],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Copy into a non-empty destination (resumes an interrupted copy)."
        ),
    ] = False,
) -> None:
    """Copy environments, memories with every version, vectors, Soul, users, keys, members,
    audit, conversations, providers and the review queue; then compare counts and SHA-256
    checksums of every collection on both sides."""
    src = open_store(source)
    try:
        dst = open_store(dest)
        try:
            checks = copy_store(src, dst, force=force)
        finally:
            dst.close()
    finally:
        src.close()
    for c in checks:
        mark = "ok" if c.ok else "MISMATCH"
        console.print(
            f"{c.name:<16} {c.source_count:>8} -> {c.dest_count:<8} {c.dest_sha256[:16]}  {mark}"
        )
    bad = [c.name for c in checks if not c.ok]
    if bad:
        raise StorageError(f"the copy differs from the source in: {', '.join(bad)}")
    console.print("copied and verified")


def register(app: typer.Typer) -> None:
    app.command("migrate-store")(migrate_store)
