"""The storage seam for imports: a ledger of what each import brought into an environment,
keyed by the item's stable key in its export. It makes a re-import add nothing and an
interrupted import resume where it stopped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ImportLedger(Protocol):
    def seen(self, environment_id: str, keys: Sequence[str]) -> dict[str, str]:
        """The keys among ``keys`` already imported into the environment, each with the id of
        what it became (a memory, a conversation)."""
        ...

    def record(self, environment_id: str, entries: Sequence[tuple[str, str]]) -> None:
        """Remember ``(key, target id)`` pairs; a key already recorded keeps its target."""
        ...

    def entries(self, environment_id: str) -> list[tuple[str, str]]:
        """Every ``(key, target id)`` recorded for the environment, by key."""
        ...

    def forget_targets(self, target_ids: Sequence[str]) -> int:
        """Drop the entries pointing at these ids (purged items); return how many."""
        ...
