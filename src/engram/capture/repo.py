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
``ENGRAM_CAPTURE=off`` (or ``false``, ``0``, ``no``, ``disabled``) captures nothing anywhere, and
so does a value that is none of these (the switch fails closed; :func:`capture_mode`).
"""

from __future__ import annotations

import os

from engram.capture.project import ancestry, git_root

TYPE_CHECKING = False  # no dataclasses, pathlib or fnmatch up front: the hook client starts faster
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

FILE_NAME = ".engram.toml"
ON, OPT_IN, OFF = "on", "opt-in", "off"
_ON_WORDS = frozenset({"", "on", "true", "1", "yes", "enabled"})
_OFF_WORDS = frozenset({"off", "false", "0", "no", "disabled"})


def capture_mode(value: str | None) -> tuple[str, str | None]:
    """The ``ENGRAM_CAPTURE`` mode (``on``, ``opt-in`` or ``off``) a value means, and a warning
    when it means nothing known: an unknown value is ``off`` (a privacy switch fails closed).
    Case and surrounding spaces are ignored; unset is ``on``."""
    word = (value or "").strip().lower()
    if word in _ON_WORDS:
        return ON, None
    if word in _OFF_WORDS:
        return OFF, None
    if word in ("opt-in", "optin", "opt_in"):
        return OPT_IN, None
    return OFF, (
        f"ENGRAM_CAPTURE={word[:40]!r} is not on, opt-in or off (nor true/false, 1/0, yes/no, "
        "enabled/disabled): nothing is captured"
    )


class RepoRules:
    """A repository's capture settings (all unset when it has no ``.engram.toml``)."""

    __slots__ = ("enabled", "environment", "ignore_commands", "ignore_paths", "root")

    def __init__(
        self,
        enabled: bool | None = None,
        ignore_paths: tuple[str, ...] = (),
        ignore_commands: tuple[str, ...] = (),
        root: str | None = None,
        environment: str | None = None,
    ) -> None:
        self.enabled = enabled
        """True: opted in; False: opted out; None: not said."""
        self.ignore_paths = ignore_paths
        self.ignore_commands = ignore_commands
        self.root = root
        """The directory holding the file (paths are matched relative to it)."""
        self.environment = environment
        """The environment the repository names (``[environment] name``) or pins (``id``)."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in sorted(self.__slots__))
        return f"RepoRules({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RepoRules):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def captures(self, mode: str) -> bool:
        """Whether this repository is captured under the global ``ENGRAM_CAPTURE`` mode (a
        value of :func:`capture_mode`)."""
        if mode == OFF:
            return False
        if mode == OPT_IN:
            return self.enabled is True
        return self.enabled is not False

    def ignores(self, command: str, files: Iterable[str], cwd: str | None = None) -> bool:
        """Whether an event running ``command`` or naming ``files`` (read or written) is
        ignored: the command matches ``ignore_commands``, or one of ``files`` or of the
        command's words (``cat secrets/db.txt``) matches ``ignore_paths``. A relative path is
        read from ``cwd`` (the agent's working directory), then from the repository root."""
        if not (self.ignore_commands or self.ignore_paths):
            return False
        from fnmatch import fnmatchcase

        if command and any(fnmatchcase(command, p) for p in self.ignore_commands):
            return True
        if self.ignore_paths:
            names = [*files, *_words(command)] if command else list(files)
            for name in names:
                rel = self._relative(name, cwd)
                if any(_path_matches(rel, p) for p in self.ignore_paths):
                    return True
        return False

    def _relative(self, name: str, cwd: str | None = None) -> str:
        if cwd and not os.path.isabs(name):
            name = os.path.normpath(os.path.join(cwd, name))
        if self.root is not None and os.path.isabs(name):
            rel = os.path.relpath(name, self.root)
            if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
                name = rel
        return name.replace(os.sep, "/") if os.sep != "/" else name


def _words(command: str) -> list[str]:
    """The words of a shell command that may name a file: split as the shell would (quotes
    removed, ``;|&<>`` apart), and each ``name=value`` word's value too."""
    import shlex

    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unbalanced quote: plain words
        words = command.split()
    out: list[str] = []
    for word in words:
        out.append(word)
        if "=" in word:
            out.extend(part for part in word.split("=")[1:] if part)
    return [w for w in out if w and not w.startswith("-")]


def _path_matches(rel: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    if fnmatchcase(rel, pattern):
        return True
    # a pattern without a slash matches the file name anywhere; "dir/**" matches below dir
    if "/" not in pattern and fnmatchcase(rel.rsplit("/", 1)[-1], pattern):
        return True
    return pattern.endswith("/**") and (rel + "/").startswith(pattern[:-2])


class RepoRulesError(ValueError):
    """The ``.engram.toml`` file cannot be read; the message names the file and the field."""


def find_rules(cwd: Path | str) -> RepoRules:
    """The rules of the nearest ``.engram.toml`` between ``cwd`` and its git root."""
    start = os.fspath(cwd)
    stop = git_root(start)
    for directory in ancestry(start):
        candidate = os.path.join(directory, FILE_NAME)
        if os.path.isfile(candidate):
            return load_rules(candidate)
        if stop is not None and directory == stop:
            break
    return RepoRules()


def load_rules(path: Path | str) -> RepoRules:
    import tomllib  # only when a repository has the file

    try:
        with open(path, encoding="utf-8") as f:
            data = tomllib.loads(f.read())
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
    root = os.path.dirname(os.fspath(path))
    return RepoRules(enabled, lists["ignore_paths"], lists["ignore_commands"], root, environment)


def _environment(path: Path | str, section: object) -> str | None:
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
