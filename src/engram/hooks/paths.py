"""Where the hook client keeps its spool, its log and finds the owner token (plain strings,
``os.path``: the hook client does not import ``pathlib``)."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def engram_home(env: Mapping[str, str]) -> str:
    """``ENGRAM_HOME``, else the platform's user data directory (as ``engram.config``)."""
    if env.get("ENGRAM_HOME"):
        return os.path.expanduser(env["ENGRAM_HOME"])
    home = env.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "engram")
    if sys.platform == "win32":
        return os.path.join(env.get("LOCALAPPDATA") or home, "engram", "engram")
    return os.path.join(env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "engram")


def hooks_dir(env: Mapping[str, str]) -> str:
    """``<home>/hooks``: the spool (``spool/``) and the log (``hook.log``), owner-only."""
    return os.path.join(engram_home(env), "hooks")


def private_dir(path: str) -> str:
    """Create ``path`` (mode 0700) if needed and tighten it if it is looser."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.name == "posix" and os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o700)
    return path
