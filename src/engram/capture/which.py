"""Which environment ("project") a process works in — one rule for the CLI, MCP (stdio and
HTTP), the capture hooks, REST and the SDK:

1. an explicit option (``--env``; over HTTP the ``environment`` parameter),
2. ``ENGRAM_ENV``,
3. the project of the working directory: the environment its ``.engram.toml`` names or pins
   (``[environment] name = "…"`` or ``id = "env_…"``), else its git root's directory name
   (over HTTP the client says it with the ``X-Engram-Project`` header),
4. the default environment (for the CLI: the one chosen with ``engram env use``, else
   ``default``).

A project's environment is created on first use; an explicit name must exist. Standard library
only: the hook client imports this in a process that must start in tens of milliseconds.
"""

from __future__ import annotations

import os

from engram.capture.project import environment_name, git_root
from engram.capture.repo import RepoRules, find_rules

TYPE_CHECKING = False  # no dataclasses or pathlib up front: the hook client starts faster
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

PROJECT_HEADER = "X-Engram-Project"
"""The HTTP header a client sends to say which project it works in (REST and ``/mcp``)."""
PROJECT_PATTERN = r"^(?:[^\s/]{1,64}/)?[a-z0-9][a-z0-9_.-]{0,63}$"
"""What the header may hold: an environment name (or an ``env_…`` id), or ``owner/name`` for
an environment shared with the caller (a team's project: never created, it must exist)."""
PROJECT_MAX_CHARS = 129

OPTION, VARIABLE, REPO_FILE, GIT, DEFAULT = "option", "ENGRAM_ENV", ".engram.toml", "git", "default"


class Choice:
    """What the rule chose: ``ref`` (an environment name or id; None: the default), the rule
    (``source``: option, ENGRAM_ENV, .engram.toml, git or default) and, for the .engram.toml
    and git rules, the project's directory (``root``)."""

    __slots__ = ("ref", "root", "source")

    def __init__(self, ref: str | None, source: str, root: Path | None = None) -> None:
        self.ref = ref
        self.source = source
        self.root = root

    def __repr__(self) -> str:
        return f"Choice(ref={self.ref!r}, source={self.source!r}, root={self.root!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Choice):
            return NotImplemented
        return (self.ref, self.source, self.root) == (other.ref, other.source, other.root)

    def __hash__(self) -> int:
        return hash((self.ref, self.source, self.root))

    @property
    def project(self) -> str | None:
        """The project's environment (created on first use), when the working directory chose."""
        return self.ref if self.source in (REPO_FILE, GIT) else None

    @property
    def explicit(self) -> str | None:
        """The environment named by an option or ``ENGRAM_ENV`` (it must exist)."""
        return self.ref if self.source in (OPTION, VARIABLE) else None

    def describe(self) -> str:
        where = f" at {self.root}" if self.root is not None else ""
        return f"{self.ref or 'the default environment'} (from {self.source}{where})"


def choose(
    explicit: str | None,
    environ: Mapping[str, str],
    cwd: str,
    rules: RepoRules | None = None,
) -> tuple[str | None, str, str | None]:
    """The rule over plain strings: (ref, source, root); :func:`which_environment` is its
    ``Path`` form. ``rules`` are the repository's, when the caller has already read them; a
    malformed ``.engram.toml`` raises :class:`~engram.capture.repo.RepoRulesError`."""
    if explicit and explicit.strip():
        return explicit.strip(), OPTION, None
    variable = environ.get("ENGRAM_ENV", "").strip()
    if variable:
        return variable, VARIABLE, None
    rules = find_rules(cwd) if rules is None else rules
    if rules.environment:
        return rules.environment, REPO_FILE, rules.root
    root = git_root(cwd)
    name = None if root is None else environment_name(root)
    if name is not None:
        return name, GIT, root
    return None, DEFAULT, None


def which_environment(
    explicit: str | None,
    environ: Mapping[str, str],
    cwd: Path,
    rules: RepoRules | None = None,
) -> Choice:
    """Apply the rule (see :func:`choose`)."""
    ref, source, root = choose(explicit, environ, os.fspath(cwd), rules)
    return Choice(ref, source, None if root is None else type(cwd)(root))
