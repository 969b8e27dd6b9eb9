"""Where the hook client keeps its spool, its log and finds the owner token."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def engram_home(env: Mapping[str, str]) -> Path:
    """``ENGRAM_HOME``, else the platform's user data directory (as ``engram.config``)."""
    if env.get("ENGRAM_HOME"):
        return Path(env["ENGRAM_HOME"]).expanduser()
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "engram"
    if sys.platform == "win32":
        return Path(env.get("LOCALAPPDATA") or home) / "engram" / "engram"
    return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "engram"


def hooks_dir(env: Mapping[str, str]) -> Path:
    """``<home>/hooks``: the spool (``spool/``) and the log (``hook.log``), owner-only."""
    return engram_home(env) / "hooks"


def private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) if needed and tighten it if it is looser."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.name == "posix" and path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path
