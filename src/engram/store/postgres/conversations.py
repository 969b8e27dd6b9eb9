"""Conversations on PostgreSQL: the same database and pool as the memories.

Appending locks the conversation's row first, so concurrent appenders number their messages
one after the other instead of colliding on a position.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from engram.extraction.conversation import (
    Conversation,
    ExtractionState,
    Message,
    NewMessage,
    Speaker,
)
from engram.store.conversations import KEYS_SQL, append_delivery
from engram.store.postgres.db import PostgresDatabase, retried

_CONV_COLS = (
    "id, environment_id, source, title, started_at, created_at, metadata, owner, external_id"
)
_MSG_COLS = "id, conversation_id, position, role, author, content, created_at, external_id"


def _conversation(row: Sequence[Any]) -> Conversation:
    return Conversation(**dict(zip([c.strip() for c in _CONV_COLS.split(",")], row, strict=True)))


def _message(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        conversation_id=row[1],
        position=row[2],
        role=Speaker(row[3]),
        author=row[4],
        content=row[5],
        created_at=row[6],
        external_id=row[7],
    )


class PostgresConversationStore:
    """Implements :class:`engram.store.conversations.ConversationStore` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    @retried
    def create_conversation(self, conversation: Conversation) -> bool:
        c = conversation
        with self._db.tx() as conn:
            added = conn.execute(
                f"INSERT INTO conversations ({_CONV_COLS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (
                    c.id,
                    c.environment_id,
                    c.source,
                    c.title,
                    c.started_at,
                    c.created_at,
                    Jsonb(c.metadata),
                    c.owner,
                    c.external_id,
                ),
            ).rowcount
        return added == 1

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_CONV_COLS} FROM conversations WHERE id = %s", (conversation_id,)
            ).fetchone()
        return _conversation(row) if row else None

    def find_conversation(self, owner: str, external_id: str) -> Conversation | None:
        with self._db.reader() as conn:
            row = conn.execute(
                f"SELECT {_CONV_COLS} FROM conversations WHERE owner = %s AND external_id = %s",
                (owner, external_id),
            ).fetchone()
        return _conversation(row) if row else None

    def owned_conversations(self, owner: str) -> list[str]:
        with self._db.reader() as conn:
            rows = conn.execute(
                "SELECT id FROM conversations WHERE owner = %s ORDER BY created_at, id", (owner,)
            ).fetchall()
        return [r[0] for r in rows]

    @retried
    def append_messages(
        self, conversation_id: str, messages: Sequence[NewMessage], new_ids: Sequence[str]
    ) -> list[Message]:
        with self._db.tx() as conn:
            conn.execute("SELECT 1 FROM conversations WHERE id = %s FOR UPDATE", (conversation_id,))
            rows = conn.execute(KEYS_SQL.format(p="%s"), (conversation_id,)).fetchall()

            def insert(msg: NewMessage, msg_id: str, position: int, key: str) -> bool:
                added = conn.execute(
                    f"INSERT INTO conversation_messages ({_MSG_COLS}, dedup_key) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (conversation_id, dedup_key) DO NOTHING",
                    (
                        msg_id,
                        conversation_id,
                        position,
                        msg.role.value,
                        msg.author,
                        msg.content,
                        msg.created_at,
                        msg.external_id,
                        key,
                    ),
                ).rowcount
                return bool(added == 1)

            return append_delivery(
                conversation_id, messages, new_ids, [(r[0], r[1]) for r in rows], insert
            )

    def messages(
        self, conversation_id: str, *, after: int = 0, limit: int | None = None
    ) -> list[Message]:
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM conversation_messages "
                "WHERE conversation_id = %s AND position > %s ORDER BY position LIMIT %s",
                (conversation_id, after, limit),
            ).fetchall()
        return [_message(r) for r in rows]

    def last_messages(self, conversation_id: str, count: int) -> list[Message]:
        with self._db.reader() as conn:
            rows = conn.execute(
                f"SELECT {_MSG_COLS} FROM conversation_messages "
                "WHERE conversation_id = %s ORDER BY position DESC LIMIT %s",
                (conversation_id, count),
            ).fetchall()
        return [_message(r) for r in reversed(rows)]

    def count_messages(self, conversation_id: str, role: str | None = None) -> int:
        query = "SELECT count(*) FROM conversation_messages WHERE conversation_id = %s"
        params: tuple[str, ...] = (conversation_id,)
        if role is not None:
            query += " AND role = %s"
            params = (conversation_id, role)
        with self._db.reader() as conn:
            row = conn.execute(query, params).fetchone()
        return int(row[0]) if row else 0

    def extraction_state(self, conversation_id: str) -> ExtractionState:
        with self._db.reader() as conn:
            row = conn.execute(
                "SELECT extracted_position, extracted_assistant FROM conversations WHERE id = %s",
                (conversation_id,),
            ).fetchone()
        if row is None:
            return ExtractionState()
        return ExtractionState(position=row[0], assistant_messages=row[1])

    @retried
    def advance_extraction(
        self, conversation_id: str, expected: ExtractionState, new: ExtractionState
    ) -> bool:
        with self._db.tx() as conn:
            moved = conn.execute(
                "UPDATE conversations SET extracted_position = %s, extracted_assistant = %s "
                "WHERE id = %s AND extracted_position = %s AND extracted_assistant = %s",
                (
                    new.position,
                    new.assistant_messages,
                    conversation_id,
                    expected.position,
                    expected.assistant_messages,
                ),
            ).rowcount
        return moved == 1
