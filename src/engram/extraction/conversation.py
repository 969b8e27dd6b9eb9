"""Conversations: where extracted memories come from.

A conversation (a chat, an agent session, an imported export) holds ordered messages. Each
message has an idempotency key — the caller's external id, or else a hash of its role, author,
content and time — so delivering the same messages twice stores them once.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from engram.limits import (
    MAX_AUTHOR_CHARS,
    MAX_NAME_CHARS,
    MAX_TITLE_CHARS,
    SPACE,
    SPACE_CLASS,
    InputModel,
    Metadata,
    Timestamp,
)
from engram.models import Content
from engram.text import content_hash

_SOURCE_RE = re.compile(r"^[a-z][a-z0-9_.-]{0,39}$")
_CONVERSATION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")

KNOWN_SOURCES = ("chatgpt", "claude", "agent", "api", "import", "cli")
"""Usual values of :attr:`Conversation.source`; any short lowercase name is accepted."""


class Speaker(StrEnum):
    """Who wrote a message of a conversation (not a role in an environment:
    :class:`engram.accounts.Role`)."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


def validate_source(value: str) -> str:
    value = value.strip(SPACE).lower()
    if not _SOURCE_RE.match(value):
        raise ValueError(f"source {value!r} must be 1-40 lowercase letters, digits, '_.-'")
    return value


def validate_conversation_id(value: str) -> str:
    if not _CONVERSATION_ID_RE.fullmatch(value):
        raise ValueError(
            f"conversation id {value!r} must be 1-128 letters, digits, '_', '.', ':' or '-'"
        )
    return value


# The patterns go to the schema; the validators say what is wrong.
SourceName = Annotated[
    str,
    Field(
        json_schema_extra={
            "pattern": rf"^[{SPACE_CLASS}]*[A-Za-z][A-Za-z0-9_.-]{{0,39}}[{SPACE_CLASS}]*$"
        }
    ),
    AfterValidator(validate_source),
]
ConversationId = Annotated[
    str,
    Field(json_schema_extra={"pattern": _CONVERSATION_ID_RE.pattern}),
    AfterValidator(validate_conversation_id),
]


class _Input(InputModel):
    """What a caller supplies: unknown fields refused, text checked (see InputModel)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NewMessage(_Input):
    """A message as a caller delivers it."""

    role: Speaker
    content: Content
    author: str | None = Field(default=None, max_length=MAX_AUTHOR_CHARS)
    created_at: Timestamp | None = None
    external_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The caller's id, for idempotency",
    )

    def dedup_key(self) -> str:
        """The key that makes re-delivery idempotent (see :func:`redelivered`)."""
        if self.external_id is not None:
            return "x:" + self.external_id
        stamp = self.created_at.isoformat() if self.created_at else ""
        return "h:" + content_hash(
            "\x1f".join((self.role.value, self.author or "", stamp, self.content))
        )

    @property
    def repeatable(self) -> bool:
        """Whether the same message may truly be said again in a conversation: with no id and
        no time, a second "ok" or "yes" has the key of the first (see :func:`redelivered`)."""
        return self.external_id is None and self.created_at is None


def stored_key(key: str, occurrence: int) -> str:
    """The key a conversation stores for the ``occurrence``-th message (from 1) of ``key``: a
    repeatable message said again is stored under its key and its count."""
    return key if occurrence == 1 else f"{key}#{occurrence}"


def delivered_key(stored: str) -> str:
    """The :meth:`NewMessage.dedup_key` of a stored key (its count, if any, dropped)."""
    return stored.split("#", 1)[0] if stored.startswith("h:") else stored


def redelivered(delivered: list[str], stored: list[str]) -> int:
    """How many of the first delivered messages (their :meth:`NewMessage.dedup_key`) are a
    re-delivery of what the conversation holds (``stored``: its keys in order, as
    :func:`delivered_key`). The messages that repeat its last stored ones, wherever they start
    in the delivery, after messages it holds: an app that sends the whole conversation again,
    or a system prompt and its last turns with a new one, re-delivers up to there; without
    such a run, the first messages the conversation already holds, each as many times as it
    holds it (a retried delivery, a system prompt sent with each turn). What follows is new, a
    second "ok" too."""
    counts = Counter(stored)
    seen: Counter[str] = Counter()
    held = 0  # the first delivered messages the conversation holds, counted as held
    for key in delivered:
        seen[key] += 1
        if seen[key] > counts[key]:
            break
        held += 1
    end = _tail_end(delivered, stored[max(0, len(stored) - len(delivered)) :], held)
    return held if end is None else end


def _tail_end(delivered: list[str], tail: list[str], held: int) -> int | None:
    """Where the longest run of ``delivered`` that repeats the end of ``tail`` ends (the latest
    of equal ones), among those starting within the first ``held`` messages (None: none).
    Knuth-Morris-Pratt over both reversed: the tail's last message first, so each match is one
    of its suffixes; linear in the two lengths."""
    pattern, text = tail[::-1], delivered[::-1]
    if not pattern or not text:
        return None
    fail = [0] * len(pattern)
    k = 0
    for q in range(1, len(pattern)):
        while k and pattern[q] != pattern[k]:
            k = fail[k - 1]
        if pattern[q] == pattern[k]:
            k += 1
        fail[q] = k
    best: tuple[int, int] | None = None  # the longest run, the latest of equal ones
    m, n = 0, len(text)
    for t, key in enumerate(text):
        while m and (m == len(pattern) or key != pattern[m]):
            m = fail[m - 1]
        if key == pattern[m]:
            m += 1
        start = n - 1 - t  # the run delivered[start : start + m] repeats the tail's last m
        if m and start <= held and (best is None or (m, start) > best):
            best = (m, start)
    return None if best is None else best[0] + best[1]


class Message(_Frozen):
    """A stored message; ``position`` orders the conversation from 1."""

    id: str
    conversation_id: str
    position: int = Field(ge=1)
    role: Speaker
    content: str
    author: str | None = None
    created_at: datetime | None = None
    external_id: str | None = None

    @property
    def speaker(self) -> str:
        """Who said it: the author's name, else the role ('user', 'assistant'...)."""
        return self.author or self.role.value


class NewConversation(_Input):
    """What a caller supplies to start a conversation. ``id`` may be the caller's own."""

    id: ConversationId | None = None
    source: SourceName = "api"
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)
    started_at: Timestamp | None = None
    metadata: Metadata = Field(default_factory=dict)


class Conversation(_Frozen):
    """A stored conversation. ``id`` is Engram's own; a caller's id is ``external_id``, scoped
    to ``owner`` (the user who started it), so two users' ids never collide."""

    id: str
    environment_id: str
    source: str = "api"
    title: str = ""
    started_at: datetime | None = None
    created_at: datetime
    metadata: dict[str, Any] = Field(default_factory=dict)
    owner: str = Field(default="", description="The user who started it")
    external_id: str | None = Field(
        default=None, description="The owner's own id for it, if they gave one"
    )


class MessagePage(_Frozen):
    """Messages of one conversation in order; pass ``next_after`` as ``after`` for the next
    page (None: this page is the last)."""

    items: list[Message]
    next_after: int | None = None


class ExtractionState(_Frozen):
    """How far extraction has read a conversation: the last message position extracted and
    how many assistant messages had arrived up to it."""

    position: int = 0
    assistant_messages: int = 0


class Transcript(_Frozen):
    """A conversation and (some of) its messages, in order: what an extractor reads."""

    conversation: Conversation
    messages: list[Message]
    summary_from: int = 0
    """The first position an episode summarises: the messages before it are context, already
    summarised by an earlier episode of the conversation (0: summarise them all)."""

    @property
    def participants(self) -> list[str]:
        return list(dict.fromkeys(m.speaker for m in self.messages if m.role is not Speaker.TOOL))

    @property
    def summarised(self) -> list[Message]:
        """The messages an episode of this transcript summarises."""
        return [m for m in self.messages if m.position >= self.summary_from]
