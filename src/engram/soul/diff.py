"""Diffs of the Soul: a block, or a whole layer, as lines, compared with difflib."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from engram.soul.blocks import order_key
from engram.soul.layers import blank
from engram.soul.model import SoulBlock


def block_lines(block: SoulBlock) -> list[str]:
    """A block as diffable lines: its settings, a blank line, its text."""
    settings = [
        f"mode: {block.mode.value}",
        f"priority: {'inherited' if block.priority is None else block.priority}",
        f"enabled: {'inherited' if block.enabled is None else str(block.enabled).lower()}",
    ]
    return [*settings, "", *block.text.splitlines()]


def layer_lines(blocks: Sequence[SoulBlock]) -> list[str]:
    """A layer as diffable lines; a stored block equal to a never-stored one is left out."""
    out: list[str] = []
    for block in sorted(blocks, key=lambda b: order_key(b.name, b.section)):
        never_stored = blank(block.name, block.environment_id, [], block.section)
        if not block.custom and block.same_content(never_stored):
            continue
        out += [f"## {block.name} ({block.section.value})", *block_lines(block), ""]
    return out


def unified_diff(before: list[str], after: list[str], from_label: str, to_label: str) -> str:
    return "\n".join(
        difflib.unified_diff(before, after, fromfile=from_label, tofile=to_label, lineterm="")
    )
