"""The block catalogue: the 13 built-in blocks, their sections and default priorities, and the
rules every block name, text and priority must follow."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.errors import Conflict, InvalidInput, NotFound
from engram.soul.model import OverrideMode, Section

MAX_BLOCK_CHARS = 8_000
"""The most characters one block's text may hold."""
MAX_CUSTOM_BLOCKS = 32
"""The most custom blocks one layer may define."""
MIN_PRIORITY, MAX_PRIORITY = 0, 100
CUSTOM_PRIORITY = 50
"""The priority of a custom block that was not given one."""

BLOCK_NAME_PATTERN = r"^[a-z][a-z0-9_]{1,39}$"
"""Every block name (built-in names follow it too); the REST path states it."""
_NAME_RE = re.compile(BLOCK_NAME_PATTERN)


@dataclass(frozen=True, slots=True)
class BlockSpec:
    """A built-in block. Higher ``priority`` blocks survive longer when a budget is tight."""

    name: str
    section: Section
    priority: int
    description: str


BUILTIN_BLOCKS: tuple[BlockSpec, ...] = (
    BlockSpec("identity", Section.SOUL, 100, "Who the assistant is, in a few sentences."),
    BlockSpec("worldview", Section.SOUL, 60, "Beliefs and values that shape its judgement."),
    BlockSpec("personality", Section.SOUL, 80, "Temperament, humour, warmth, directness."),
    BlockSpec("tensions", Section.SOUL, 50, "Trade-offs it weighs and how it resolves them."),
    BlockSpec("communication_style", Section.STYLE, 90, "Tone, length, structure of answers."),
    BlockSpec("anti_patterns", Section.STYLE, 85, "What it must never do or say."),
    BlockSpec("style_guide", Section.STYLE, 60, "Formatting, naming and writing conventions."),
    BlockSpec("example_interactions", Section.STYLE, 30, "Short examples of good exchanges."),
    BlockSpec("expertise", Section.CONTEXT, 70, "Domains it knows well and how deeply."),
    BlockSpec("rules", Section.CONTEXT, 95, "Hard rules that always apply."),
    BlockSpec("user_profile", Section.CONTEXT, 75, "Who the user is: role, background, goals."),
    BlockSpec("current_focus", Section.CONTEXT, 80, "What the user is working on right now."),
    BlockSpec("learned_patterns", Section.CONTEXT, 45, "Habits and preferences learned over time."),
)
BUILTIN: dict[str, BlockSpec] = {spec.name: spec for spec in BUILTIN_BLOCKS}
_ORDER = {spec.name: i for i, spec in enumerate(BUILTIN_BLOCKS)}
_SECTION_ORDER = {section: i for i, section in enumerate(Section)}


def order_key(name: str, section: Section) -> tuple[int, int, str]:
    """Rendering order: section, then built-ins in catalogue order, then custom blocks by name."""
    return (_SECTION_ORDER[section], _ORDER.get(name, len(_ORDER)), name)


def default_priority(name: str) -> int:
    spec = BUILTIN.get(name)
    return spec.priority if spec else CUSTOM_PRIORITY


def validate_custom_name(name: str) -> str:
    """A new custom block's name: 2-40 characters, a lowercase letter then letters, digits or
    '_', not a built-in or section name (it becomes an XML element name)."""
    name = name.strip().lower()
    if not _NAME_RE.match(name):
        raise InvalidInput(
            f"block name {name!r} must be 2-40 characters: a lowercase letter, then lowercase "
            "letters, digits or '_'",
            field="name",
        )
    if name in BUILTIN:
        raise Conflict(f"{name!r} is a built-in block, not a custom one")
    if name in {s.value for s in Section} or name.startswith("xml"):
        raise Conflict(f"block name {name!r} is reserved")
    return name


def unknown_block(name: str, custom: list[str]) -> NotFound:
    """The error for a name that is neither built in nor a custom block of this Soul: there is
    no such block (404 over HTTP), and the message lists those there are."""
    valid = ", ".join([*BUILTIN, *sorted(custom)])
    return NotFound(
        f"unknown block {name!r}; valid blocks are: {valid} (give a section to add a custom block)",
        field="name",
        valid=[*BUILTIN, *sorted(custom)],
    )


def validate_text(name: str, text: str) -> str:
    """Block text: trailing whitespace trimmed, at most :data:`MAX_BLOCK_CHARS` characters."""
    text = text.strip()
    if len(text) > MAX_BLOCK_CHARS:
        raise InvalidInput(
            f"block {name!r} text is {len(text)} characters; the limit is {MAX_BLOCK_CHARS}",
            field="text",
            limit=MAX_BLOCK_CHARS,
        )
    return text


def validate_priority(priority: int) -> int:
    if not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise InvalidInput(
            f"priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}, got {priority}",
            field="priority",
        )
    return priority


def parse_section(value: str) -> Section:
    try:
        return Section(value.strip().lower())
    except ValueError:
        raise InvalidInput(
            f"unknown section {value!r}; valid sections are: {', '.join(Section)}",
            field="section",
        ) from None


def parse_mode(value: str) -> OverrideMode:
    try:
        return OverrideMode(value.strip().lower())
    except ValueError:
        raise InvalidInput(
            f"unknown mode {value!r}; valid modes are: {', '.join(OverrideMode)}", field="mode"
        ) from None
