"""Delivered messages as searchable memories: what was said stays findable, not only what the
extractor kept.

Each stored message becomes one memory of the episode layer with category ``message``: its
content is ``"<speaker>: <text>"``, its author the speaker, its thread the conversation, its
time the message's own (so recency and the rendered date are when it was said), and its
metadata names the message (``message_id``, ``conversation_id``, ``position``). The previous
and next messages are indexed as keyword-only context, so a question phrased like the turn
beside the answer still finds it. Episodes are not deduplicated against facts, and a message
memory is never compacted (see ``lifecycle.decay.is_cold``): the record stays as delivered.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.extraction.conversation import Conversation, Message
from engram.limits import MAX_CONTENT_CHARS
from engram.models import (
    MESSAGE_CATEGORY,
    EpisodeDetails,
    Layer,
    Memory,
    NewMemory,
    Source,
)

MESSAGE_IMPORTANCE = 0.4
CONTEXT_CHARS = 600
"""How much of each neighbouring message is indexed as keyword context."""


def is_message(memory: Memory) -> bool:
    """Whether ``memory`` is a delivered message (not an extracted or written memory)."""
    return memory.layer is Layer.EPISODE and memory.category == MESSAGE_CATEGORY


def message_id_of(memory: Memory) -> str | None:
    value = memory.metadata.get("message_id") if is_message(memory) else None
    return value if isinstance(value, str) else None


def source_ids(memory: Memory) -> list[str]:
    """The messages a memory was read from (its own id for a message memory)."""
    own = message_id_of(memory)
    if own is not None:
        return [own]
    raw: Any = memory.metadata.get("source_message_ids")
    return [str(i) for i in raw] if isinstance(raw, list) else []


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_memories(
    conversation: Conversation,
    messages: Sequence[Message],
    before: Message | None = None,
    *,
    now: datetime,
) -> list[NewMemory]:
    """One memory per message of ``messages`` (consecutive, in order); ``before``: the message
    that precedes the first of them, if any (keyword context for it)."""
    out: list[NewMemory] = []
    for i, msg in enumerate(messages):
        previous = messages[i - 1] if i > 0 else before
        following = messages[i + 1] if i + 1 < len(messages) else None
        neighbours = [
            _clip(f"{m.speaker}: {m.content}", CONTEXT_CHARS)
            for m in (previous, following)
            if m is not None
        ]
        said_at = msg.created_at or conversation.started_at or now
        out.append(
            NewMemory(
                layer=Layer.EPISODE,
                content=_clip(f"{msg.speaker}: {msg.content}", MAX_CONTENT_CHARS),
                category=MESSAGE_CATEGORY,
                importance=MESSAGE_IMPORTANCE,
                confidence=1.0,
                source=Source.IMPORT,
                author=msg.speaker,
                thread=conversation.id,
                created_at=said_at,
                keyword_context="\n".join(neighbours),
                episode=EpisodeDetails(
                    period_start=said_at,
                    period_end=said_at,
                    participants=[msg.speaker],
                    conversation_id=conversation.id,
                ),
                metadata={
                    "kind": MESSAGE_CATEGORY,
                    "message_id": msg.id,
                    "conversation_id": conversation.id,
                    "position": msg.position,
                    "role": msg.role.value,
                },
            )
        )
    return out
