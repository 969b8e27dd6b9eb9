"""Writing configuration files that belong to other programs: a timestamped backup beside the
file before each change, then an atomic replace (a crash leaves the old file or the new one)."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

BACKUP_MARK = ".engram-backup-"


def backup(path: Path) -> Path | None:
    """Copy ``path`` to ``<name>.engram-backup-<UTC stamp>``; None if it does not exist."""
    if not path.exists():
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    copy = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}")
    shutil.copy2(path, copy)
    return copy


def write(path: Path, text: str | None) -> Path | None:
    """Make ``path`` hold ``text`` (None: remove it), backing it up first; returns the backup.
    Nothing happens (and no backup is made) when the file already holds ``text``."""
    current = read(path)
    if current == text:
        return None
    copy = backup(path)
    if text is None:
        path.unlink()
        return copy
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".engram-tmp")
    tmp.write_text(text, encoding="utf-8")
    if path.exists():
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
    return copy


def read(path: Path) -> str | None:
    """The file's text, None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
