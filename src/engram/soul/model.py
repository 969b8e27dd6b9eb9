"""The Soul's value objects: a block's stored state in one layer, its versions, whole-layer
snapshots, the effective (inherited) view of a Soul and a rendered Soul.

A Soul has two layers per user: the **global** layer (``environment_id`` is ``None``) and, per
environment, an **override** layer whose blocks replace or extend the global ones. Every change to
a block appends a :class:`SoulBlockVersion`; nothing is ever overwritten in place.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Section(StrEnum):
    """The three XML sections of a rendered Soul, in the order they are rendered."""

    SOUL = "soul"
    STYLE = "style"
    CONTEXT = "context"


class OverrideMode(StrEnum):
    """What a block's text does to the text it inherits.

    The global layer always ``replace``s (there is nothing above it). In an environment,
    ``replace`` swaps the global text, ``extend`` appends to it and ``inherit`` keeps it (the
    override may still change ``priority`` or ``enabled``).
    """

    REPLACE = "replace"
    EXTEND = "extend"
    INHERIT = "inherit"


class SoulAction(StrEnum):
    """What a block version records."""

    CREATE = "create"
    UPDATE = "update"
    PRESET = "preset"
    RESTORE = "restore"


class SnapshotKind(StrEnum):
    MANUAL = "manual"
    AUTO = "auto"


class BlockSource(StrEnum):
    """Where an effective block's text comes from."""

    DEFAULT = "default"
    GLOBAL = "global"
    ENVIRONMENT = "environment"
    EXTENDED = "global+environment"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SoulBlock(_Frozen):
    """One block's state in one layer.

    ``priority`` and ``enabled`` left as ``None`` inherit: from the global layer in an
    environment, from the block catalogue in the global layer.
    """

    name: str
    section: Section
    environment_id: str | None = None
    mode: OverrideMode = OverrideMode.REPLACE
    text: str = ""
    priority: int | None = None
    enabled: bool | None = None
    custom: bool = False
    version: int = 0
    updated_at: datetime | None = None
    updated_by: str | None = None

    def same_content(self, other: SoulBlock) -> bool:
        """Whether two states differ only in bookkeeping (version, time, author)."""
        keys = ("name", "section", "environment_id", "mode", "text", "priority", "enabled")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


class SoulBlockVersion(_Frozen):
    """An append-only record of one change to a block: its full state after the change."""

    action: SoulAction
    reason: str = ""
    state: SoulBlock

    @property
    def version(self) -> int:
        return self.state.version


class SoulSnapshot(_Frozen):
    """The whole state of one layer at one moment: every stored block, as it was."""

    id: str
    owner: str
    environment_id: str | None = None
    kind: SnapshotKind = SnapshotKind.MANUAL
    label: str = ""
    created_at: datetime
    actor: str | None = None
    blocks: list[SoulBlock] = Field(default_factory=list)


class EffectiveBlock(_Frozen):
    """A block as an environment sees it, after inheritance."""

    name: str
    section: Section
    text: str
    priority: int
    enabled: bool
    custom: bool = False
    source: BlockSource = BlockSource.DEFAULT


class SoulView(_Frozen):
    """The effective Soul of one environment, blocks in rendering order."""

    owner: str
    environment_id: str
    environment: str
    blocks: list[EffectiveBlock]

    def block(self, name: str) -> EffectiveBlock | None:
        return next((b for b in self.blocks if b.name == name), None)


class SoulUpdate(_Frozen):
    """What a preset or a snapshot restore changed, and the snapshot taken just before."""

    backup: SoulSnapshot
    changed: list[SoulBlock]


class RenderedSoul(_Frozen):
    """A Soul rendered as XML within a token budget.

    ``tokens`` (counted with :func:`engram.tokens.count_tokens`) never exceeds ``max_tokens``.
    ``truncated`` blocks were cut short to fit; ``dropped`` ones left out entirely, lowest
    priority first. Disabled and empty blocks are neither included nor dropped.
    """

    text: str
    tokens: int
    max_tokens: int
    included: list[str]
    truncated: list[str] = Field(default_factory=list)
    dropped: list[str] = Field(default_factory=list)
