"""The storage seam for conversations (``Store.conversations`` on both backends)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Protocol

from engram.extraction.conversation import (
    Conversation,
    ExtractionState,
    Message,
    NewMessage,
    delivered_key,
    redelivered,
    stored_key,
)


class ConversationStore(Protocol):
    """Conversations, their ordered messages and how far extraction has read them."""

    def create_conversation(self, conversation: Conversation) -> bool:
        """Store a new conversation; False (and nothing changed) if its id, or its owner's
        external id, already exists."""
        ...

    def get_conversation(self, conversation_id: str) -> Conversation | None: ...

    def find_conversation(self, owner: str, external_id: str) -> Conversation | None:
        """The conversation ``owner`` started under their own id ``external_id``."""
        ...

    def owned_conversations(self, owner: str) -> list[str]:
        """The ids of the conversations ``owner`` stored (in any environment), oldest first."""
        ...

    def append_messages(
        self, conversation_id: str, messages: Sequence[NewMessage], new_ids: Sequence[str]
    ) -> list[Message]:
        """Append the messages not stored yet (:func:`append_delivery`), atomically; return
        only those newly stored, with their positions. ``new_ids`` supplies an id for
        each message in order (unused ones are dropped)."""
        ...

    def messages(
        self, conversation_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[Message]:
        """Messages with position > ``after``, in order."""
        ...

    def last_messages(self, conversation_id: str, count: int) -> list[Message]:
        """The last ``count`` messages, in order."""
        ...

    def count_messages(self, conversation_id: str, role: str | None = None) -> int: ...

    def extraction_state(self, conversation_id: str) -> ExtractionState: ...

    def advance_extraction(
        self, conversation_id: str, expected: ExtractionState, new: ExtractionState
    ) -> bool:
        """Compare-and-set the extraction state; False if another writer moved it first."""
        ...


KEYS_SQL = (
    "SELECT position, dedup_key FROM conversation_messages WHERE conversation_id = {p} "
    "ORDER BY position"
)
"""The stored messages a delivery is compared with, by position and key (``{p}``: the
backend's placeholder), in order; the last position is the last row's."""


def append_delivery(
    conversation_id: str,
    messages: Sequence[NewMessage],
    new_ids: Sequence[str],
    rows: Sequence[tuple[int, str]],
    insert: Callable[[NewMessage, str, int, str], bool],
) -> list[Message]:
    """The delivered messages a conversation stores (both backends, in their transaction):
    those after its re-delivery (``rows``: its stored messages' positions and keys in order,
    :data:`KEYS_SQL`; see :func:`~engram.extraction.conversation.redelivered`), each by
    ``insert(message, id, position, key)``, which stores it unless its key is stored already
    (an id or a time seen before: a re-delivery); a repeatable message said again takes the
    next count of its key."""
    last = int(rows[-1][0]) if rows else 0
    held = [delivered_key(str(k)) for _, k in rows]
    wanted = [m.dedup_key() for m in messages]
    skip = redelivered(wanted, held)
    count = Counter(held)
    stored: list[Message] = []
    for msg, msg_id, key in list(zip(messages, new_ids, wanted, strict=True))[skip:]:
        occurrence = count[key] + 1 if msg.repeatable else 1
        added = insert(msg, msg_id, last + 1, stored_key(key, occurrence))
        while not added and msg.repeatable:  # a key count taken meanwhile: the next one
            occurrence += 1
            added = insert(msg, msg_id, last + 1, stored_key(key, occurrence))
        if not added:
            continue
        count[key] = occurrence
        last += 1
        stored.append(
            Message(
                id=msg_id,
                conversation_id=conversation_id,
                position=last,
                role=msg.role,
                author=msg.author,
                content=msg.content,
                created_at=msg.created_at,
                external_id=msg.external_id,
            )
        )
    return stored
