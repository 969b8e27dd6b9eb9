"""Which project a working directory belongs to: the nearest git root, named after its
directory. MCP stdio, the CLI and the capture hooks use this one rule, so sessions in
different agents in the same repository share an environment.

Over plain strings (``os.path``): the hook client imports this without ``pathlib`` or ``re``;
the ``Path`` forms wrap them."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def ancestry(cwd: str) -> Iterator[str]:
    """``cwd`` and each directory above it, nearest first (as ``Path.parents``)."""
    directory = cwd.rstrip(os.sep) or os.sep
    while True:
        yield directory
        parent = os.path.dirname(directory)
        if not parent or parent == directory:
            return
        directory = parent


def git_root(cwd: str) -> str | None:
    """The nearest directory at or above ``cwd`` holding ``.git`` (a directory or a file)."""
    for directory in ancestry(cwd):
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
    return None


def project_root(cwd: Path) -> Path | None:
    """:func:`git_root` as a ``Path``."""
    root = git_root(os.fspath(cwd))
    return None if root is None else type(cwd)(root)


def environment_name(directory: str) -> str | None:
    """An environment name for a project directory: its name lowercased, each run of other
    characters than ``a-z 0-9 _ . -`` made one ``-``, at most 64 characters."""
    out: list[str] = []
    in_run = False
    for ch in os.path.basename(directory).lower():
        if ch in _NAME_CHARS:
            out.append(ch)
            in_run = False
        elif not in_run:
            out.append("-")
            in_run = True
    return "".join(out).strip("-._")[:64] or None


def project_environment(cwd: Path | str) -> str | None:
    """An environment name for the project around ``cwd``: its directory name, made valid."""
    root = git_root(os.fspath(cwd))
    return None if root is None else environment_name(root)
