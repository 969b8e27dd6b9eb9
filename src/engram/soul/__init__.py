"""The Soul: versioned identity blocks, rendered first into every context.

- :mod:`engram.soul.model`: value objects (blocks, versions, snapshots, views, renders);
- :mod:`engram.soul.blocks`: the 13 built-in blocks and the validation rules;
- :mod:`engram.soul.layers`: inheritance from the global Soul into an environment;
- :mod:`engram.soul.diff`: blocks and layers as unified diffs;
- :mod:`engram.soul.presets`: Balanced, Creative, Technical, Mentor;
- :mod:`engram.soul.render`: XML rendering within a token budget.

The behaviour (edits, versions, snapshots, presets) lives in
:class:`engram.service.soul.SoulService`.
"""

from engram.soul.blocks import BUILTIN_BLOCKS, MAX_BLOCK_CHARS, BlockSpec
from engram.soul.model import (
    BlockSource,
    EffectiveBlock,
    OverrideMode,
    RenderedSoul,
    Section,
    SnapshotKind,
    SoulAction,
    SoulBlock,
    SoulBlockVersion,
    SoulSnapshot,
    SoulUpdate,
    SoulView,
)
from engram.soul.presets import PRESETS, Preset

__all__ = [
    "BUILTIN_BLOCKS",
    "MAX_BLOCK_CHARS",
    "PRESETS",
    "BlockSource",
    "BlockSpec",
    "EffectiveBlock",
    "OverrideMode",
    "Preset",
    "RenderedSoul",
    "Section",
    "SnapshotKind",
    "SoulAction",
    "SoulBlock",
    "SoulBlockVersion",
    "SoulSnapshot",
    "SoulUpdate",
    "SoulView",
]
