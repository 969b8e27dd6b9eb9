"""The rows both stores share: the memory columns, the listing orders, and one mapping from
rows back to value objects, which differs between the dialects only in how a timestamp column
is decoded (SQLite stores epoch seconds, PostgreSQL returns aware datetimes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from engram.models import (
    ORDERS,
    Environment,
    EpisodeDetails,
    Layer,
    Memory,
    MemoryVersion,
    ProcedureDetails,
    Source,
    Status,
    search_text,
)
from engram.store.protocol import RankFields
from engram.trusted import construct

ORDER_SQL: dict[str, str] = {
    order: f"m.{order.lstrip('-')} {'DESC' if order.startswith('-') else 'ASC'}" for order in ORDERS
}
"""The ORDER BY clause of each listing order (both dialects), over the alias ``m``."""

MEMORY_FIELDS = (
    "id",
    "environment_id",
    "layer",
    "status",
    "category",
    "content",
    "tags",
    "importance",
    "confidence",
    "source",
    "pinned",
    "supersedes",
    "superseded_by",
    "merged_into",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "reinforcement_count",
    "author",
    "metadata",
    "details",
    "version",
    "keyword_context",
    "thread",
    "recorded_at",
)
"""The memory columns, in the order both stores select them."""

USAGE_FIELDS = frozenset({"access_count", "last_accessed_at"})
"""The columns only ``record_access`` moves: a write of a memory read before its latest reads
were counted must not set them back, so an update of a stored memory leaves them as stored."""

# enum members by value: a dict lookup, not the Enum call (a few µs each, for every row read)
_LAYER = {m.value: m for m in Layer}
_STATUS = {m.value: m for m in Status}
_SOURCE = {m.value: m for m in Source}


_EMPTY: dict[str, Callable[[], Any]] = {"[]": list, "{}": dict}


def _json(value: Any) -> Any:
    """A JSON column: text in SQLite (most often an empty list or object, made without the
    parser), already decoded by psycopg from ``jsonb``."""
    if isinstance(value, str):
        empty = _EMPTY.get(value)
        return empty() if empty is not None else json.loads(value)
    return json.loads(value) if isinstance(value, bytes) else value


def _constructed(**values: Any) -> Memory:
    """A Memory from every one of its fields, already valid (that was half the cost of
    reading a memory; context assembly reads ~75 per call)."""
    return construct(Memory, values)


class TimedRows:
    """The base of a dialect's row mappers: ``time`` decodes a non-null timestamp column."""

    def __init__(self, time: Callable[[Any], datetime]) -> None:
        self._time = time

    def _maybe_time(self, value: Any) -> datetime | None:
        return None if value is None else self._time(value)


def _details(
    layer: Layer, details: str | None
) -> tuple[EpisodeDetails | None, ProcedureDetails | None]:
    """An episode's or a procedure's details from their JSON text (None for other layers)."""
    if details is not None:
        if layer is Layer.EPISODE:
            return EpisodeDetails.model_validate_json(details), None
        if layer is Layer.PROCEDURE:
            return None, ProcedureDetails.model_validate_json(details)
    return None, None


def row_search_text(layer: str, content: str, details: str | None) -> str:
    """A memory's searchable text from its ``layer``, ``content`` and ``details`` columns
    (what the indexer embeds), without reading the rest of the row."""
    return search_text(content, *_details(_LAYER[layer], details))


class RowMapper(TimedRows):
    """Rows to value objects for one dialect."""

    def memory(self, row: Sequence[Any]) -> Memory:
        """A Memory from a row in ``MEMORY_FIELDS`` order (``details`` as the layer's JSON
        text); extra columns after those are ignored."""
        (
            id_,
            environment_id,
            layer_value,
            status,
            category,
            content,
            tags,
            importance,
            confidence,
            source,
            pinned,
            supersedes,
            superseded_by,
            merged_into,
            created_at,
            updated_at,
            last_accessed_at,
            access_count,
            reinforcement_count,
            author,
            metadata,
            details,
            version,
            keyword_context,
            thread,
            recorded_at,
        ) = tuple(row)[: len(MEMORY_FIELDS)]
        layer = _LAYER[layer_value]
        episode, procedure = _details(layer, details)
        # rows are written only by the stores, from validated models: skip re-validation
        return _constructed(
            id=id_,
            environment_id=environment_id,
            layer=layer,
            content=content,
            category=category,
            tags=_json(tags),
            importance=importance,
            confidence=confidence,
            source=_SOURCE[source],
            status=_STATUS[status],
            pinned=bool(pinned),
            supersedes=supersedes,
            superseded_by=superseded_by,
            merged_into=merged_into,
            created_at=self._time(created_at),
            updated_at=self._time(updated_at),
            last_accessed_at=self._maybe_time(last_accessed_at),
            access_count=access_count,
            reinforcement_count=reinforcement_count,
            author=author,
            metadata=_json(metadata),
            episode=episode,
            procedure=procedure,
            keyword_context=keyword_context,
            thread=thread,
            version=version,
            recorded_at=self._maybe_time(recorded_at),
            redactions={},  # given, so pydantic computes no default (slow: it inspects the factory)
        )

    def environment(self, row: Sequence[Any]) -> Environment:
        """An Environment from ``id, name, owner, description, created_at, metadata``."""
        id_, name, owner, description, created, metadata = row
        return Environment(
            id=id_,
            name=name,
            owner=owner,
            description=description,
            created_at=self._time(created),
            metadata=_json(metadata),
        )

    def version(self, row: Sequence[Any]) -> MemoryVersion:
        """A MemoryVersion from ``memory_id, version, action, at, actor, reason, snapshot``
        (the snapshot as JSON text)."""
        return MemoryVersion(
            memory_id=row[0],
            version=row[1],
            action=row[2],
            at=self._time(row[3]),
            actor=row[4],
            reason=row[5],
            snapshot=Memory.model_validate_json(row[6]),
        )

    def rank_fields(self, row: Sequence[Any]) -> RankFields:
        """From ``id, layer, importance, confidence, updated_at, access_count, author,
        thread, category, created_at``."""
        return RankFields(
            row[0],
            _LAYER[row[1]],
            row[2],
            row[3],
            self._time(row[4]),
            row[5],
            row[6],
            row[7],
            row[8],
            self._time(row[9]),
        )


USER_ROWS = (
    ("api_keys", "user_id"),
    ("environment_members", "user_id"),
    ("soul_blocks", "owner"),
    ("soul_block_versions", "owner"),
    ("soul_snapshots", "owner"),
    ("idempotency_keys", "user_id"),
    ("users", "id"),
)
"""An account's own rows (both dialects), by the column naming the user: keys before the
user they name. :meth:`engram.store.protocol.Store.erase` deletes them."""
