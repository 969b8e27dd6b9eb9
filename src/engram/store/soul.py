"""The Soul's storage seam: current block states per layer, their append-only versions, and
whole-layer snapshots. A layer is the global Soul (``environment_id`` ``None``) or one
environment's overrides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engram.soul.model import SoulBlock, SoulBlockVersion, SoulSnapshot
from engram.store.accounts import Audit


class SoulStore(Protocol):
    def blocks(self, owner: str, environment_ids: Sequence[str | None]) -> list[SoulBlock]:
        """The stored blocks of ``owner``'s layers among ``environment_ids`` (one read)."""
        ...

    def versions(self, owner: str, environment_id: str | None, name: str) -> list[SoulBlockVersion]:
        """Every version of one block in one layer, oldest first."""
        ...

    def write(
        self,
        owner: str,
        changes: Sequence[SoulBlockVersion],
        snapshot: SoulSnapshot | None = None,
        audit: Audit = (),
    ) -> None:
        """In one transaction: store ``snapshot`` (if any), set each block's new state, append
        its version and append the audit entries. Each change's version must follow the stored
        one by exactly 1, else :class:`engram.errors.Conflict` is raised and nothing is
        written."""
        ...

    def snapshots(self, owner: str, environment_id: str | None) -> list[SoulSnapshot]:
        """One layer's snapshots, oldest first."""
        ...

    def get_snapshot(self, owner: str, snapshot_id: str) -> SoulSnapshot | None: ...
