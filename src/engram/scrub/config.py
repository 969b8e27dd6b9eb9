"""Reading a site's scrub settings from ``<home>/scrub.toml`` (at entry points only)::

# strings, or regexes found in a match, that must survive
allow = ["AKIAIOSFODNN7EXAMPLE"]
allow_regex = ["^sk-test-"]

# extra kinds of secret: name = regex (a group named 'secret' limits what is replaced)
[patterns]
internal_token = "itk_[A-Za-z0-9]{20,}"
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput
from engram.scrub.scrubber import Scrubber, ScrubConfig

FILE = "scrub.toml"


def load_scrub_config(home: Path) -> ScrubConfig:
    """The settings in ``home/scrub.toml``, or the defaults when there is no such file."""
    path = home / FILE
    if not path.is_file():
        return ScrubConfig()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not valid TOML: {exc}") from exc
    unknown = set(data) - {"allow", "allow_regex", "patterns"}
    if unknown:
        raise InvalidInput(
            f"{path}: unknown setting(s) {', '.join(sorted(unknown))}; "
            "expected allow, allow_regex and [patterns]"
        )
    patterns = data.get("patterns", {})
    if not isinstance(patterns, dict):
        raise InvalidInput(f'{path}: [patterns] must be a table of name = "regex"')
    config = ScrubConfig(
        extra=tuple((name, _text(path, f"patterns.{name}", v)) for name, v in patterns.items()),
        allow=_texts(path, "allow", data.get("allow", [])),
        allow_regex=_texts(path, "allow_regex", data.get("allow_regex", [])),
    )
    try:
        Scrubber(config)  # every regex compiles, every name is a valid kind
    except ValueError as exc:
        raise InvalidInput(f"{path}: {exc}") from exc
    return config


def _text(path: Path, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{path}: {key} must be a non-empty string")
    return value


def _texts(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: {key} must be a list of strings")
    return tuple(_text(path, f"{key}[{i}]", v) for i, v in enumerate(value))
