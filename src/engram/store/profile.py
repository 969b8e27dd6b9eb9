"""The storage seam for the cross-project profile: a user's habits (held at the user level,
in no environment) and whether the user opted in to learning them."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

COLUMNS = "id, user_id, key, text, projects, stated_global, created_at, updated_at"
"""The columns of ``profile_entries`` both backends read, in this order."""


@dataclass(frozen=True)
class ProfileEntry:
    id: str
    user_id: str
    key: str
    """The habit's wording, normalised (one row per user and key)."""
    text: str
    projects: tuple[str, ...]
    """The environment ids of the projects where the user said it."""
    stated_global: bool
    """The user said it holds everywhere ("in all my projects", "globally")."""
    created_at: datetime
    updated_at: datetime

    @property
    def promoted(self) -> bool:
        """Part of the profile: said in two projects, stated as global, or written by hand."""
        return self.stated_global or len(self.projects) >= 2


def entry_of(row: Sequence[Any], when: Callable[[Any], datetime]) -> ProfileEntry:
    """An entry from a row of :data:`COLUMNS` (``when`` reads the backend's timestamps)."""
    return ProfileEntry(
        id=row[0],
        user_id=row[1],
        key=row[2],
        text=row[3],
        projects=tuple(json.loads(row[4])),
        stated_global=bool(row[5]),
        created_at=when(row[6]),
        updated_at=when(row[7]),
    )


class ProfileStore(Protocol):
    def put_entry(self, entry: ProfileEntry) -> None:
        """Insert the entry or replace the one with its id; a second entry with the same
        (user, key) raises :class:`~engram.errors.Conflict`."""
        ...

    def get_entry(self, entry_id: str) -> ProfileEntry | None: ...

    def find_entry(self, user_id: str, key: str) -> ProfileEntry | None: ...

    def list_entries(self, user_id: str) -> list[ProfileEntry]:
        """The user's entries, oldest first."""
        ...

    def delete_entry(self, entry_id: str) -> bool:
        """Remove the entry for good; False when there was none."""
        ...

    def set_learning(self, user_id: str, enabled: bool) -> None: ...

    def learning(self, user_id: str) -> bool:
        """Whether the user opted in to learning their profile (False until they do)."""
        ...
