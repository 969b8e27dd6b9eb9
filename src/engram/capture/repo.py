"""Per-repository capture settings: ``.engram.toml`` at the repository root (or any directory
between it and the working directory; the nearest wins)::

    [capture]
    enabled = false                  # opt this repository out (true: opt in)
    ignore_paths = ["secrets/**", "*.pem"]
    ignore_commands = ["vault *", "*psql*"]

    [environment]
    name = "shop"                    # the environment this repository uses (created on first use)
    # id = "env_…"                   # or pin an existing one, e.g. shared by a teammate

With ``ENGRAM_CAPTURE=opt-in`` only repositories that set ``enabled = true`` are captured;
``ENGRAM_CAPTURE=off`` captures nothing anywhere.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path, PurePath

from engram.capture.events import Event
from engram.capture.project import project_root

FILE_NAME = ".engram.toml"


@dataclass(frozen=True)
class RepoRules:
    enabled: bool | None = None
    """True: opted in; False: opted out; None: not said."""
    ignore_paths: tuple[str, ...] = ()
    ignore_commands: tuple[str, ...] = ()
    root: Path | None = None
    """The directory holding the file (paths are matched relative to it)."""
    environment: str | None = None
    """The environment the repository names (``[environment] name``) or pins (``id``)."""

    def captures(self, mode: str) -> bool:
        """Whether this repository is captured under the global ``ENGRAM_CAPTURE`` mode."""
        if mode == "off":
            return False
        if mode == "opt-in":
            return self.enabled is True
        return self.enabled is not False

    def ignores(self, event: Event) -> bool:
        """Whether the event touches an ignored path or runs an ignored command."""
        if event.command and any(
            fnmatch.fnmatchcase(event.command, p) for p in self.ignore_commands
        ):
            return True
        if self.ignore_paths:
            for name in event.files:
                rel = self._relative(name)
                if any(_path_matches(rel, p) for p in self.ignore_paths):
                    return True
        return False

    def _relative(self, name: str) -> str:
        path = PurePath(name)
        if self.root is not None and path.is_absolute():
            try:
                return path.relative_to(self.root).as_posix()
            except ValueError:
                return path.as_posix()
        return path.as_posix()


def _path_matches(rel: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    # a pattern without a slash matches the file name anywhere; "dir/**" matches below dir
    if "/" not in pattern and fnmatch.fnmatchcase(PurePath(rel).name, pattern):
        return True
    return pattern.endswith("/**") and (rel + "/").startswith(pattern[:-2])


class RepoRulesError(ValueError):
    """The ``.engram.toml`` file cannot be read; the message names the file and the field."""


def find_rules(cwd: Path) -> RepoRules:
    """The rules of the nearest ``.engram.toml`` between ``cwd`` and its git root."""
    stop = project_root(cwd)
    for directory in (cwd, *cwd.parents):
        candidate = directory / FILE_NAME
        if candidate.is_file():
            return load_rules(candidate)
        if stop is not None and directory == stop:
            break
    return RepoRules()


def load_rules(path: Path) -> RepoRules:
    import tomllib  # only when a repository has the file

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RepoRulesError(f"{path}: {exc}") from exc
    section = data.get("capture", {})
    if not isinstance(section, dict):
        raise RepoRulesError(f"{path}: [capture] must be a table")
    enabled = section.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise RepoRulesError(f"{path}: capture.enabled must be true or false")
    lists: dict[str, tuple[str, ...]] = {}
    for name in ("ignore_paths", "ignore_commands"):
        value = section.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RepoRulesError(f"{path}: capture.{name} must be a list of strings")
        lists[name] = tuple(value)
    environment = _environment(path, data.get("environment", {}))
    return RepoRules(
        enabled, lists["ignore_paths"], lists["ignore_commands"], path.parent, environment
    )


def _environment(path: Path, section: object) -> str | None:
    if not isinstance(section, dict):
        raise RepoRulesError(f"{path}: [environment] must be a table")
    unknown = sorted(set(section) - {"name", "id"})
    if unknown:
        raise RepoRulesError(f"{path}: environment.{unknown[0]} is not a setting (name or id)")
    if "name" in section and "id" in section:
        raise RepoRulesError(f"{path}: set environment.name or environment.id, not both")
    value = section.get("name", section.get("id"))
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise RepoRulesError(f"{path}: environment.{next(iter(section))} must be a string")
    if "id" in section and not value.startswith("env_"):
        raise RepoRulesError(f"{path}: environment.id must be an id (env_…), got {value!r}")
    if "name" in section and value.startswith("env_"):
        raise RepoRulesError(f"{path}: environment.name is a name; pin an id with environment.id")
    return value.strip()
