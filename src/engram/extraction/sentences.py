"""Splitting message text into sentences and list items, the units every extractor reads."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.extraction.conversation import Message

_SPLIT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LIST_ITEM_RE = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•]|step\s+\d+[:.)])\s+(.+?)\s*$", re.I)
_SPACE_RE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    message: Message
    index: int
    """Position of the sentence in the whole transcript, from 0."""

    @property
    def is_question(self) -> bool:
        return self.text.rstrip().endswith("?")


def list_item(line: str) -> str | None:
    """The text of a numbered or bulleted line, else None."""
    match = _LIST_ITEM_RE.match(line)
    return match.group(1) if match else None


def split_text(text: str) -> list[str]:
    """Sentences of ``text``; each line is split on its own, so list items stay whole."""
    out: list[str] = []
    for line in text.splitlines():
        line = _SPACE_RE.sub(" ", line).strip()
        if not line:
            continue
        out.extend(s.strip() for s in _SPLIT_RE.split(line) if s.strip())
    return out


def sentences(messages: list[Message]) -> list[Sentence]:
    out: list[Sentence] = []
    for message in messages:
        for text in split_text(message.content):
            out.append(Sentence(text, message, len(out)))
    return out
