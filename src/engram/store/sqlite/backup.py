"""Backups of a live SQLite store with SQLite's online backup API, and their restore.

A backup is a new directory holding ``engram.db`` (a consistent snapshot: the backup API
copies the pages of one read transaction, so writers keep committing meanwhile and none of
their half-done work is in the copy), the home's key files (the server secret: API-key
digests depend on it; ``provider-keys.key``: the stored LLM provider keys are encrypted with it)
and ``manifest.json`` with the row count and SHA-256 of every table. Restoring
checks the backup against its manifest, copies it into an empty home with the same API, and
checks the copy against the manifest again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from engram.errors import InvalidInput, StorageError

DATABASE = "engram.db"
MANIFEST = "manifest.json"
FORMAT = 1


@dataclass(frozen=True)
class TableSum:
    name: str
    rows: int
    sha256: str


def checksums(path: Path) -> list[TableSum]:
    """Row count and SHA-256 of every table of the database file ``path`` (not in use by a
    writer: a backup or a freshly restored copy), rows in storage order."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "ORDER BY name"
            )
        ]
        sums = []
        for name in names:
            digest, rows = hashlib.sha256(), 0
            # every table here is ordered by its primary key (or rowid) without an ORDER BY
            for row in conn.execute(f'SELECT * FROM "{name}"'):
                digest.update(repr(tuple(row)).encode())
                rows += 1
            sums.append(TableSum(name, rows, digest.hexdigest()))
        return sums
    finally:
        conn.close()


def _copy(source: Path, dest: Path) -> None:
    """Page by page with the online backup API, in one step (one read snapshot); the copy is
    left in rollback-journal mode (one self-contained file) and checked for integrity."""
    src = sqlite3.connect(source, timeout=30)
    try:
        dst = sqlite3.connect(dest)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode = DELETE")
            if (check := dst.execute("PRAGMA integrity_check").fetchone()[0]) != "ok":
                raise StorageError(f"the copy {dest} is damaged: {check}")
        finally:
            dst.close()
    finally:
        src.close()


def backup(database: Path, keys: Sequence[Path], target: Path) -> list[TableSum]:
    """Back the store at ``database`` (and the key files of ``keys`` that exist) up into the
    new directory ``target``; return what the manifest records."""
    if not database.is_file():
        raise InvalidInput(f"there is no database at {database}")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InvalidInput(f"{target} already exists: back up into a new directory")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(mode=0o700, parents=True)
    _copy(database, partial / DATABASE)
    os.chmod(partial / DATABASE, 0o600)
    for key in keys:
        if key.is_file():
            shutil.copyfile(key, partial / key.name)
            os.chmod(partial / key.name, 0o600)
    sums = checksums(partial / DATABASE)
    manifest = {
        "format": FORMAT,
        "created_at": datetime.now(UTC).isoformat(),
        "tables": {s.name: {"rows": s.rows, "sha256": s.sha256} for s in sums},
    }
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    if target.exists():
        target.rmdir()
    partial.rename(target)  # a backup is complete or absent, never half there
    return sums


def _expected(source: Path) -> list[TableSum]:
    try:
        manifest = json.loads((source / MANIFEST).read_text())
        tables = manifest["tables"]
        if manifest.get("format") != FORMAT:
            raise InvalidInput(f"{source}: unknown backup format {manifest.get('format')!r}")
        return [TableSum(n, int(t["rows"]), str(t["sha256"])) for n, t in sorted(tables.items())]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{source} is not an Engram backup (no readable {MANIFEST})") from exc


def _mismatch(what: Path, expected: list[TableSum]) -> None:
    found = checksums(what)
    if found != expected:
        bad = sorted({s.name for s in set(found) ^ set(expected)})
        raise StorageError(f"{what} does not match the backup's manifest in: {', '.join(bad)}")


def restore(source: Path, database: Path, keys: Sequence[Path]) -> list[TableSum]:
    """Restore the backup directory ``source`` as ``database`` (and each key file of ``keys``
    the backup holds, by its name) in a home that has no database nor key file yet; checked
    against the manifest before and after the copy."""
    expected = _expected(source)
    if not (source / DATABASE).is_file():
        raise InvalidInput(f"{source} has no {DATABASE}")
    _mismatch(source / DATABASE, expected)
    if database.exists() or any(k.exists() for k in keys):
        raise InvalidInput(
            f"{database.parent} is not empty (it has a database or a key file): restore "
            "into a new home, e.g. 'engram --home NEW_DIR restore-backup BACKUP'"
        )
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    partial = database.with_name(database.name + ".partial")
    partial.unlink(missing_ok=True)
    _copy(source / DATABASE, partial)
    try:
        _mismatch(partial, expected)
    except StorageError:
        partial.unlink()
        raise
    os.chmod(partial, 0o600)
    for key in keys:
        if (source / key.name).is_file():
            shutil.copyfile(source / key.name, key)
            os.chmod(key, 0o600)
    partial.rename(database)
    return expected
