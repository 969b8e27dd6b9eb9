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

from dataclasses import dataclass
from pathlib import Path

from engram.capture.project import project_environment, project_root
from engram.capture.repo import RepoRules, find_rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

PROJECT_HEADER = "X-Engram-Project"
"""The HTTP header a client sends to say which project it works in (REST and ``/mcp``)."""
PROJECT_PATTERN = r"^[a-z0-9][a-z0-9_.-]{0,63}$"
"""What the header may hold: an environment name (or an ``env_…`` id)."""

OPTION, VARIABLE, REPO_FILE, GIT, DEFAULT = "option", "ENGRAM_ENV", ".engram.toml", "git", "default"


@dataclass(frozen=True)
class Choice:
    ref: str | None
    """An environment name or id; None: the default."""
    source: str
    """Which rule chose it: option, ENGRAM_ENV, .engram.toml, git or default."""
    root: Path | None = None
    """The project's directory (for the .engram.toml and git rules)."""

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


def which_environment(
    explicit: str | None,
    environ: Mapping[str, str],
    cwd: Path,
    rules: RepoRules | None = None,
) -> Choice:
    """Apply the rule. ``rules`` are the repository's, when the caller has already read them;
    a malformed ``.engram.toml`` raises :class:`~engram.capture.repo.RepoRulesError`."""
    if explicit and explicit.strip():
        return Choice(explicit.strip(), OPTION)
    variable = environ.get("ENGRAM_ENV", "").strip()
    if variable:
        return Choice(variable, VARIABLE)
    rules = find_rules(cwd) if rules is None else rules
    if rules.environment:
        return Choice(rules.environment, REPO_FILE, rules.root)
    name = project_environment(cwd)
    if name is not None:
        return Choice(name, GIT, project_root(cwd))
    return Choice(None, DEFAULT)
