"""Which project a working directory belongs to: the nearest git root, named after its
directory. MCP stdio, the CLI and the capture hooks use this one rule, so sessions in
different agents in the same repository share an environment."""

from __future__ import annotations

import re
from pathlib import Path


def project_root(cwd: Path) -> Path | None:
    """The nearest directory at or above ``cwd`` holding ``.git`` (a directory or a file)."""
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return None


def project_environment(cwd: Path) -> str | None:
    """An environment name for the project around ``cwd``: its directory name, made valid."""
    root = project_root(cwd)
    if root is None:
        return None
    name = re.sub(r"[^a-z0-9_.-]+", "-", root.name.lower()).strip("-._")[:64]
    return name or None
