"""engram backup PATH and engram restore-backup PATH: a consistent copy of a live SQLite
store (the online backup API, safe while the server writes) and its restore into an empty
home, both checked by row counts and SHA-256 checksums of every table. A PostgreSQL store is
backed up with PostgreSQL's own tools (pg_dump / pg_restore); these commands say so."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from engram.cli.common import console, state
from engram.config import Settings
from engram.errors import InvalidInput
from engram.extraction.keys import KEY_FILE
from engram.service.accounts import SECRET_FILE
from engram.store.sqlite import backup as sqlite_backup

PG_HELP = (
    'this store is PostgreSQL: back it up with pg_dump -Fc -d "$ENGRAM_DATABASE_URL" -f '
    "engram.dump and restore into an empty database with pg_restore --no-owner -d NEW_URL "
    "engram.dump; also keep <home>/server_secret (API keys depend on it) and "
    "<home>/provider-keys.key (the stored LLM provider keys are encrypted with it)"
)


def _sqlite_path(settings: Settings) -> Path:
    url = settings.database_url
    if url.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(PG_HELP)
    if url.startswith("sqlite:///"):
        url = url[len("sqlite:///") :]
    elif "://" in url:
        raise InvalidInput(f"unsupported database URL {url!r}")
    return Path(url)


def _keys(settings: Settings) -> list[Path]:
    """The home's key files a backup carries: the server secret (API-key digests) and the key
    the stored LLM provider keys are encrypted with."""
    return [settings.home / SECRET_FILE, settings.home / KEY_FILE]


def _report(sums: list[sqlite_backup.TableSum]) -> None:
    rows = sum(s.rows for s in sums)
    for s in sums:
        if not s.name.startswith(("memories_fts_", "memory_fts_")):
            console.print(f"  {s.name:<28} {s.rows:>9}  {s.sha256[:16]}")
    console.print(f"{len(sums)} tables, {rows} rows, checksums match")


def backup(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A new directory for the backup.")],
) -> None:
    """Back up the SQLite store (while the server runs, with SQLite's online backup API: a
    consistent snapshot, never a file copy), the server secret and the provider key file into
    the new directory PATH,
    with a manifest of row counts and checksums. Restore it with 'engram restore-backup PATH'.
    On PostgreSQL use pg_dump (this command prints how)."""
    settings = state(ctx).settings
    database = _sqlite_path(settings)
    sums = sqlite_backup.backup(database, _keys(settings), path)
    console.print(f"backed up {database} to {path}")
    _report(sums)


def restore_backup(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A directory written by 'engram backup'.")],
) -> None:
    """Restore a backup made by 'engram backup' into this home, which must have no database
    yet (use --home NEW_DIR or ENGRAM_HOME): checked against the backup's manifest (row counts
    and SHA-256 of every table) before and after the copy. Not 'engram restore ID', which
    brings back a memory's version."""
    settings = state(ctx).settings
    database = _sqlite_path(settings)
    sums = sqlite_backup.restore(path, database, _keys(settings))
    console.print(f"restored {path} into {database}")
    _report(sums)
    console.print(
        "its API keys and stored provider keys work here (the server secret and the provider "
        "key file came with it); 'engram init' writes this home's token file"
    )


def register(app: typer.Typer) -> None:
    app.command("backup")(backup)
    app.command("restore-backup")(restore_backup)
