"""The storage seam for conversations: a narrow protocol, and the factory that finds the
implementation matching a memory store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from engram.errors import MissingDependency
from engram.extraction.conversation import Conversation, ExtractionState, Message, NewMessage
from engram.store.protocol import Store


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


def conversation_store_for(store: Store) -> ConversationStore:
    """The conversation store living beside ``store`` (the same database)."""
    from engram.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from engram.store.sqlite.conversations import SQLiteConversationStore

        return SQLiteConversationStore(store.db)
    found = getattr(store, "conversations", None)  # a store that carries its own (PostgreSQL)
    if found is not None:
        return cast(ConversationStore, found)
    raise MissingDependency(f"conversations are not supported on {type(store).__name__}")
