"""Inheritance: the effective blocks of an environment from the global layer and the
environment's override layer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from engram.soul.blocks import (
    BUILTIN,
    BUILTIN_BLOCKS,
    default_priority,
    order_key,
    unknown_block,
)
from engram.soul.model import BlockSource, EffectiveBlock, OverrideMode, Section, SoulBlock

T = TypeVar("T")


def effective(
    global_blocks: Iterable[SoulBlock], overrides: Iterable[SoulBlock] = ()
) -> list[EffectiveBlock]:
    """Every block (built-in and custom) as the environment sees it, in rendering order.

    An override's text replaces or extends the global text (or, with ``inherit``, leaves it);
    its ``priority`` and ``enabled``, when set, win over the global ones, which in turn win over
    the catalogue defaults.
    """
    top = {b.name: b for b in global_blocks}
    env = {b.name: b for b in overrides}
    sections = {spec.name: spec.section for spec in BUILTIN_BLOCKS}
    for block in [*env.values(), *top.values()]:  # a global custom block's section wins
        if block.name not in BUILTIN:
            sections[block.name] = block.section
    out: list[EffectiveBlock] = []
    for name, section in sections.items():
        g, o = top.get(name), env.get(name)
        text, source = "", BlockSource.DEFAULT
        if g is not None and g.text:
            text, source = g.text, BlockSource.GLOBAL
        if o is not None and o.mode is OverrideMode.REPLACE:
            text, source = o.text, BlockSource.ENVIRONMENT
        elif o is not None and o.mode is OverrideMode.EXTEND and o.text:
            if text:
                text, source = f"{text}\n\n{o.text}", BlockSource.EXTENDED
            else:
                text, source = o.text, BlockSource.ENVIRONMENT
        priority = _first(
            [o.priority if o else None, g.priority if g else None], default_priority(name)
        )
        enabled = _first([o.enabled if o else None, g.enabled if g else None], True)
        out.append(
            EffectiveBlock(
                name=name,
                section=section,
                text=text,
                priority=priority,
                enabled=enabled,
                custom=name not in BUILTIN,
                source=source,
            )
        )
    out.sort(key=lambda b: order_key(b.name, b.section))
    return out


def _first(values: list[T | None], default: T) -> T:
    return next((v for v in values if v is not None), default)


def blank(
    name: str, env_id: str | None, top: Sequence[SoulBlock], section: Section | None
) -> SoulBlock:
    """A block never stored in this layer: empty, inheriting in an environment."""
    spec = BUILTIN.get(name)
    defined = next((b for b in top if b.name == name), None)
    sec = spec.section if spec else defined.section if defined else section
    if sec is None:
        raise unknown_block(name, [])
    return SoulBlock(
        name=name,
        section=sec,
        environment_id=env_id,
        mode=OverrideMode.REPLACE if env_id is None else OverrideMode.INHERIT,
        custom=spec is None,
    )
