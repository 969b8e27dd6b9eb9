"""Conversations on the SQLite store: the same file and connections as the memories."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from engram.extraction.conversation import (
    Conversation,
    ExtractionState,
    Message,
    NewMessage,
    Speaker,
)
from engram.store.conversations import KEYS_SQL, append_delivery
from engram.store.sqlite.db import SQLiteDatabase

_CONV_COLS = (
    "id, environment_id, source, title, started_at, created_at, metadata, owner, external_id"
)
_MSG_COLS = "id, conversation_id, position, role, author, content, created_at, external_id"


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def _conversation(row: Sequence[Any]) -> Conversation:
    return Conversation(
        id=row[0],
        environment_id=row[1],
        source=row[2],
        title=row[3],
        started_at=_dt(row[4]),
        created_at=datetime.fromtimestamp(row[5], UTC),
        metadata=json.loads(row[6]),
        owner=row[7],
        external_id=row[8],
    )


def _message(row: Sequence[Any]) -> Message:
    return Message(
        id=row[0],
        conversation_id=row[1],
        position=row[2],
        role=Speaker(row[3]),
        author=row[4],
        content=row[5],
        created_at=_dt(row[6]),
        external_id=row[7],
    )


class SQLiteConversationStore:
    """Implements :class:`engram.store.conversations.ConversationStore`."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self._db = db

    def create_conversation(self, conversation: Conversation) -> bool:
        c = conversation
        with self._db.tx() as conn:
            cur = conn.execute(
                f"INSERT INTO conversations ({_CONV_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (
                    c.id,
                    c.environment_id,
                    c.source,
                    c.title,
                    _ts(c.started_at),
                    c.created_at.timestamp(),
                    json.dumps(c.metadata),
                    c.owner,
                    c.external_id,
                ),
            )
            return cur.rowcount == 1

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        row = (
            self._db.reader()
            .execute(f"SELECT {_CONV_COLS} FROM conversations WHERE id = ?", (conversation_id,))
            .fetchone()
        )
        return _conversation(row) if row else None

    def find_conversation(self, owner: str, external_id: str) -> Conversation | None:
        row = (
            self._db.reader()
            .execute(
                f"SELECT {_CONV_COLS} FROM conversations WHERE owner = ? AND external_id = ?",
                (owner, external_id),
            )
            .fetchone()
        )
        return _conversation(row) if row else None

    def owned_conversations(self, owner: str) -> list[str]:
        rows = self._db.reader().execute(
            "SELECT id FROM conversations WHERE owner = ? ORDER BY created_at, id", (owner,)
        )
        return [r[0] for r in rows]

    def append_messages(
        self, conversation_id: str, messages: Sequence[NewMessage], new_ids: Sequence[str]
    ) -> list[Message]:
        with self._db.tx() as conn:
            rows = conn.execute(KEYS_SQL.format(p="?"), (conversation_id,)).fetchall()

            def insert(msg: NewMessage, msg_id: str, position: int, key: str) -> bool:
                added = conn.execute(
                    f"INSERT INTO conversation_messages ({_MSG_COLS}, dedup_key) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (conversation_id, dedup_key) DO NOTHING",
                    (
                        msg_id,
                        conversation_id,
                        position,
                        msg.role.value,
                        msg.author,
                        msg.content,
                        _ts(msg.created_at),
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
        rows = (
            self._db.reader()
            .execute(
                f"SELECT {_MSG_COLS} FROM conversation_messages "
                "WHERE conversation_id = ? AND position > ? ORDER BY position LIMIT ?",
                (conversation_id, after, -1 if limit is None else limit),
            )
            .fetchall()
        )
        return [_message(r) for r in rows]

    def last_messages(self, conversation_id: str, count: int) -> list[Message]:
        rows = (
            self._db.reader()
            .execute(
                f"SELECT {_MSG_COLS} FROM conversation_messages "
                "WHERE conversation_id = ? ORDER BY position DESC LIMIT ?",
                (conversation_id, count),
            )
            .fetchall()
        )
        return [_message(r) for r in reversed(rows)]

    def count_messages(self, conversation_id: str, role: str | None = None) -> int:
        sql = "SELECT count(*) FROM conversation_messages WHERE conversation_id = ?"
        params: tuple[str, ...] = (conversation_id,)
        if role is not None:
            sql += " AND role = ?"
            params = (conversation_id, role)
        return int(self._db.reader().execute(sql, params).fetchone()[0])

    def extraction_state(self, conversation_id: str) -> ExtractionState:
        row = (
            self._db.reader()
            .execute(
                "SELECT extracted_position, extracted_assistant FROM conversations WHERE id = ?",
                (conversation_id,),
            )
            .fetchone()
        )
        if row is None:
            return ExtractionState()
        return ExtractionState(position=row[0], assistant_messages=row[1])

    def advance_extraction(
        self, conversation_id: str, expected: ExtractionState, new: ExtractionState
    ) -> bool:
        with self._db.tx() as conn:
            cur = conn.execute(
                "UPDATE conversations SET extracted_position = ?, extracted_assistant = ? "
                "WHERE id = ? AND extracted_position = ? AND extracted_assistant = ?",
                (
                    new.position,
                    new.assistant_messages,
                    conversation_id,
                    expected.position,
                    expected.assistant_messages,
                ),
            )
            return cur.rowcount == 1
