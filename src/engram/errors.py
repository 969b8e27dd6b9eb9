"""Domain errors. Raised in the core, translated once at each edge (CLI, REST, MCP).

Every error carries a machine-readable ``code`` and a message that names what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_ENUM_REPR = re.compile(r"<\w+\.\w+: ('[^']*'|\d+)>")
"""An enum member as pydantic's messages show it (``<Layer.FACT: 'fact'>``)."""


def validation_text(message: str) -> str:
    """One pydantic message in plain words: no ``Value error,`` prefix, an enum member shown
    as its value (``Input should be 'fact'``, not ``<Layer.FACT: 'fact'>``)."""
    return _ENUM_REPR.sub(r"\1", message.removeprefix("Value error, "))


def validation_lines(errors: Iterable[Mapping[str, Any]], skip: int = 0) -> list[str]:
    """Each pydantic error as ``where: what`` (``skip``: leading location parts to leave out,
    e.g. the ``body`` or ``query`` of a request)."""
    out = []
    for err in errors:
        loc = ".".join(str(p) for p in tuple(err.get("loc", ()))[skip:]) or "input"
        out.append(f"{loc}: {validation_text(str(err.get('msg', '')))}")
    return out


class EngramError(Exception):
    """Base of every error Engram raises on purpose."""

    code = "engram_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(EngramError):
    """The caller asked for something malformed or out of range."""

    code = "invalid_input"


class NotFound(EngramError):
    """A memory, environment or version that does not exist (or is not visible)."""

    code = "not_found"


class Conflict(EngramError):
    """The request clashes with the current state (duplicate name, non-empty environment...)."""

    code = "conflict"


class PermissionDenied(EngramError):
    """The actor may not do this."""

    code = "permission_denied"


class Unauthenticated(EngramError):
    """No valid credentials."""

    code = "unauthenticated"


class MissingDependency(EngramError):
    """An optional part is not installed; the message names the extra or package."""

    code = "missing_dependency"

    @classmethod
    def extra(cls, what: str, extra: str) -> MissingDependency:
        """``what`` needs the optional ``extra``: how to install it from the checkout (the
        distribution is not on PyPI, where the name ``engram`` is another project's)."""
        return cls(
            f"{what} needs the {extra!r} extra: scripts/install --extras {extra} in the Engram "
            f"checkout (or pip install '.[{extra}]' there)",
            extra=extra,
        )


class StorageError(EngramError):
    """The store could not complete an operation (corrupt file, failed migration...)."""

    code = "storage_error"


class Saturated(EngramError):
    """Too much work is queued: try again later (an edge answers 429)."""

    code = "saturated"
