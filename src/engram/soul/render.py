"""Rendering a Soul as XML within a token budget.

The output has up to three sections, always in the order ``<soul>``, ``<style>``,
``<context>``, each holding one element per block (named after the block) in catalogue order::

    <soul>
    <identity>
    You are Ada, ...
    </identity>
    </soul>
    <style>
    ...

Block text is XML-escaped (``&``, ``<``, ``>``). When the whole Soul does not fit, blocks are
dropped lowest priority first (on equal priority, the later block first); the highest-priority
dropped block is then cut short to fill what is left, if a useful part of it fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from engram.errors import InvalidInput
from engram.soul.model import EffectiveBlock, RenderedSoul, Section
from engram.tokens import count_tokens, truncate_to_tokens

MIN_PARTIAL_TOKENS = 24
"""A dropped block is cut short to fit only if at least this many tokens of its text fit."""


def element(name: str, text: str) -> str:
    return f"<{name}>\n{escape(text)}\n</{name}>"


def compose(parts: Sequence[tuple[EffectiveBlock, str]]) -> str:
    """The XML of ``(block, text)`` pairs, grouped into sections in the fixed order."""
    out = []
    for section in Section:
        elements = [element(b.name, text) for b, text in parts if b.section is section]
        if elements:
            out.append(f"<{section.value}>\n" + "\n".join(elements) + f"\n</{section.value}>")
    return "\n".join(out)


def render(blocks: Sequence[EffectiveBlock], max_tokens: int) -> RenderedSoul:
    """Render the enabled, non-empty ``blocks`` (in rendering order) in at most ``max_tokens``."""
    if max_tokens < 0:
        raise InvalidInput(f"max_tokens must not be negative, got {max_tokens}")
    shown = [b for b in blocks if b.enabled and b.text.strip()]
    rank = {b.name: i for i, b in enumerate(shown)}
    drop_order = sorted(shown, key=lambda b: (b.priority, -rank[b.name]))
    kept = {b.name: b.text.strip() for b in shown}

    # cheap estimate first (each element counted once), then exact counts of the whole text
    cost = {b.name: count_tokens(element(b.name, kept[b.name])) + 1 for b in shown}
    estimate = sum(cost.values()) + 8 * len(Section)
    dropped: list[EffectiveBlock] = []
    while estimate > max_tokens and len(dropped) < len(drop_order):
        victim = drop_order[len(dropped)]
        dropped.append(victim)
        estimate -= cost[victim.name]
    text, tokens = _measure(shown, kept, dropped)
    while tokens > max_tokens and len(dropped) < len(drop_order):
        dropped.append(drop_order[len(dropped)])
        text, tokens = _measure(shown, kept, dropped)
    # the estimate may have been pessimistic: bring back blocks that fit after all
    while dropped:
        trial_text, trial_tokens = _measure(shown, kept, dropped[:-1])
        if trial_tokens > max_tokens:
            break
        dropped.pop()
        text, tokens = trial_text, trial_tokens

    truncated: list[str] = []
    if dropped:
        best = dropped[-1]
        room = max_tokens - tokens - count_tokens(element(best.name, "")) - 2
        gone = {b.name for b in dropped}
        if best.section not in {b.section for b in shown if b.name not in gone}:
            room -= 2 * count_tokens(f"<{best.section.value}>")
        for _ in range(4):
            if room < MIN_PARTIAL_TOKENS:
                break
            cut = truncate_to_tokens(kept[best.name], room)
            trial = dict(kept, **{best.name: cut})
            trial_text, trial_tokens = _measure(shown, trial, dropped[:-1])
            if trial_tokens <= max_tokens:
                dropped.pop()
                kept, text, tokens = trial, trial_text, trial_tokens
                truncated.append(best.name)
                break
            room -= trial_tokens - max_tokens + 2
    gone = {b.name for b in dropped}
    return RenderedSoul(
        text=text,
        tokens=tokens,
        max_tokens=max_tokens,
        included=[b.name for b in shown if b.name not in gone],
        truncated=truncated,
        dropped=[b.name for b in dropped],
    )


def _measure(
    shown: Sequence[EffectiveBlock], texts: dict[str, str], dropped: Sequence[EffectiveBlock]
) -> tuple[str, int]:
    gone = {b.name for b in dropped}
    text = compose([(b, texts[b.name]) for b in shown if b.name not in gone])
    return text, count_tokens(text)
