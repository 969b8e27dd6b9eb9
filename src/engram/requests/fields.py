"""Field types several request models share, each carrying its limit from
:mod:`engram.limits`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from engram.limits import (
    JSON_NUMBER,
    MAX_ENVIRONMENT_REF_CHARS,
    MAX_FILTER_VALUES,
    MAX_REASON_CHARS,
    MAX_THREAD_CHARS,
)

EnvironmentRef = Annotated[str, Field(max_length=MAX_ENVIRONMENT_REF_CHARS)]
"""An environment named by its name or id."""
FilterValue = Annotated[str, Field(max_length=MAX_THREAD_CHARS)]
"""One value of a list filter (a category, a tag, a thread)."""
FilterValues = Annotated[list[FilterValue], Field(max_length=MAX_FILTER_VALUES)]
Reason = Annotated[str, Field(max_length=MAX_REASON_CHARS)]
"""A reason or a note kept in the history."""
Version = Annotated[int, Field(ge=1, le=1_000_000), JSON_NUMBER]
"""A memory's version number."""
