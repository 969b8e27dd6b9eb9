"""Owner-only files: the data directory is 0700 and every file Engram creates is 0600.

Memories, tokens and the server secret are nobody else's business on a shared machine. Two
places call this module: :func:`prepare_home` where an entry point opens the data directory
(it also repairs a home made by an older version), and :func:`private_database` just before
SQLite opens a database file. SQLite creates ``-wal``, ``-shm`` and ``-journal`` files with the
mode of the database file, so a 0600 database keeps its companions 0600 without a process-wide
umask (which would race with other threads).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

DIR_MODE = 0o700
FILE_MODE = 0o600
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def _restrict(path: Path, mode: int) -> None:
    """chmod to ``mode`` when the current mode differs (never following a symlink)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode) or stat.S_IMODE(st.st_mode) == mode:
        return
    os.chmod(path, mode)


def prepare_home(home: Path) -> Path:
    """Create the data directory owner-only, and make what is already in it owner-only: every
    directory 0700, every file 0600 (symlinks are left alone)."""
    home.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    _restrict(home, DIR_MODE)
    for root, dirs, files in os.walk(home):
        for name in dirs:
            _restrict(Path(root, name), DIR_MODE)
        for name in files:
            _restrict(Path(root, name), FILE_MODE)
    return home


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read (0600), created with that mode from the start."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, FILE_MODE)


def private_dir(path: Path) -> Path:
    """Create a directory (and any missing parent) owner-only (0700); an existing one is
    restricted."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for p in (path, *missing):
        _restrict(p, DIR_MODE)
    return path


def open_private(path: Path) -> BinaryIO:
    """A new file only its owner can read (0600, from the start), open for binary writing."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    os.fchmod(fd, FILE_MODE)  # an existing file keeps its mode through O_CREAT
    return os.fdopen(fd, "wb")


def private_database(path: Path) -> None:
    """Make a SQLite database file 0600 before it is opened: created empty with that mode if
    missing (an empty file is a valid empty database), else restricted, with its companions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for suffix in ("", *SQLITE_COMPANIONS):
        _restrict(Path(f"{path}{suffix}"), FILE_MODE)
