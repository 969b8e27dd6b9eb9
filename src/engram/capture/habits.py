"""Habits in the user's own words: a sentence of a prompt that states a standing preference
("always …", "never …", "prefer X over Y"), and whether it says it holds everywhere.

Only the user's prompts are read for this, never tool output. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HABIT = re.compile(
    r"^(?:please\s+|pls\s+)?(?:(?:i|we)\s+(?:do\s+)?)?(?:always|never)\b"
    r"|\bprefer\b.{2,}?\b(?:over|to|instead of|rather than)\b",
    re.I,
)
_GLOBAL = re.compile(
    r",?\s*\b(?:in (?:all|every)(?: of)? (?:my |our )?(?:projects?|repos|repositories|"
    r"codebases?)|across (?:all )?(?:my |our )?projects|everywhere|globally)\b",
    re.I,
)
MAX_HABIT_CHARS = 300


@dataclass(frozen=True)
class Habit:
    text: str
    key: str
    """The wording, normalised: case, spacing, end punctuation and "everywhere" removed."""
    stated_global: bool


def habit_key(text: str) -> str:
    """The normalised wording that identifies a habit (the same habit said twice)."""
    words = " ".join(_GLOBAL.sub(" ", text).lower().split())
    return words.strip(" .!;:,")


def habit_of(sentence: str) -> Habit | None:
    """The habit a prompt sentence states, else None."""
    text = " ".join(sentence.split())
    if not 3 <= len(text) <= MAX_HABIT_CHARS or not _HABIT.search(text):
        return None
    key = habit_key(text)
    if not key:
        return None
    return Habit(text, key, bool(_GLOBAL.search(text)))
