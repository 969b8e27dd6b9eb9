"""The storage seam for conversations (``Store.conversations`` on both backends)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from engram.extraction.conversation import Conversation, ExtractionState, Message, NewMessage


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
        """Append the messages not stored yet (by :meth:`NewMessage.dedup_key`), atomically;
        return only those newly stored, with their positions. ``new_ids`` supplies an id for
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
