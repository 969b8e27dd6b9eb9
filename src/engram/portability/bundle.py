"""What an import brings: conversations, memories and environments read from a file, and what
was skipped (with the reason). Every item carries a stable key so that importing the same
export again adds nothing."""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from engram.extraction.conversation import NewMessage
from engram.limits import MAX_CONTENT_CHARS
from engram.models import NewMemory

LOW_CONFIDENCE = 0.4
"""Memories inferred from traces (ChatGPT's ``bio`` tool calls, custom instructions)."""


@dataclass(frozen=True)
class Skipped:
    """Something in the file that was not imported, and why."""

    file: str
    entry: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.entry}: {self.reason}"


@dataclass(frozen=True)
class ImportedConversation:
    key: str
    """Stable across exports: the source's own id (or a hash of content and time)."""
    source: str
    title: str
    started_at: datetime | None
    messages: list[NewMessage]
    environment: str | None = None
    """An environment name from the export (a Claude project); None: the target environment."""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportedMemory:
    key: str
    memory: NewMemory
    environment: str | None = None
    source: str = ""


@dataclass(frozen=True)
class ImportedEnvironment:
    name: str
    description: str = ""
    key: str = ""


@dataclass
class Bundle:
    """Everything one file (or folder) holds, in the order it is to be stored."""

    formats: list[str] = field(default_factory=list)
    conversations: list[ImportedConversation] = field(default_factory=list)
    memories: list[ImportedMemory] = field(default_factory=list)
    environments: list[ImportedEnvironment] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def add_format(self, name: str) -> None:
        if name not in self.formats:
            self.formats.append(name)

    @property
    def message_count(self) -> int:
        return sum(len(c.messages) for c in self.conversations)

    def extend(self, other: Bundle) -> None:
        for name in other.formats:
            self.add_format(name)
        self.conversations.extend(other.conversations)
        self.memories.extend(other.memories)
        self.environments.extend(other.environments)
        self.skipped.extend(other.skipped)


def stable_key(*parts: object) -> str:
    """A short hash of the parts: the same content gives the same key in every export."""
    joined = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(joined.encode()).hexdigest()[:32]


_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")


def source_id(value: object) -> str:
    """The source's id when it can be part of ours as it is, else a hash of it."""
    text = str(value)
    return text if _SAFE_ID.match(text) else stable_key(text)


def clip(text: str) -> str:
    """Text cut to what a memory holds, never inside a token (a word, a key): the import
    scrubs what it stores after this cut, and a secret cut in two can be too short for its
    pattern (``ghp_`` and 20 of its characters), so a token the cut would split is left out
    whole."""
    text = text.strip()
    if len(text) <= MAX_CONTENT_CHARS:
        return text
    end = MAX_CONTENT_CHARS - 1
    if text[end] in _TOKEN_CHARS:  # the cut splits a token (minified JSON has no spaces)
        start = end
        while start > 0 and text[start - 1] in _TOKEN_CHARS:
            start -= 1
        if start > 0:  # else all one token: nothing to keep whole
            end = start
    return text[:end].rstrip() + "…"


_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-.+/=~%")
"""What a secret token is made of (keys, tokens, base64, URL-encoded values)."""


def from_epoch(value: object) -> datetime | None:
    """Unix seconds (int or float) as an aware datetime; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def from_iso(value: object) -> datetime | None:
    """An ISO-8601 string (``Z`` suffix accepted) as an aware datetime; None if not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
