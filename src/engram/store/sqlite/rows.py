"""Mapping between value objects and SQLite rows, and the WHERE clause of a MemoryFilter."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from engram.models import (
    Environment,
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    ProcedureDetails,
    Source,
    Status,
)
from engram.text import content_hash

MEMORY_COLUMNS = (
    "id, environment_id, layer, status, category, content, tags, importance, confidence, "
    "source, pinned, supersedes, superseded_by, merged_into, created_at, updated_at, "
    "last_accessed_at, access_count, reinforcement_count, author, metadata, details, version, "
    "keyword_context"
)


def ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def memory_params(m: Memory) -> tuple[Any, ...]:
    details: str | None = None
    if m.episode is not None:
        details = m.episode.model_dump_json()
    elif m.procedure is not None:
        details = m.procedure.model_dump_json()
    return (
        m.id,
        m.environment_id,
        m.layer.value,
        m.status.value,
        m.category,
        m.content,
        json.dumps(m.tags),
        m.importance,
        m.confidence,
        m.source.value,
        int(m.pinned),
        m.supersedes,
        m.superseded_by,
        m.merged_into,
        ts(m.created_at),
        ts(m.updated_at),
        ts(m.last_accessed_at),
        m.access_count,
        m.reinforcement_count,
        m.author,
        json.dumps(m.metadata),
        details,
        m.version,
        m.keyword_context,
        content_hash(m.search_text()),
    )


def memory_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Memory:
    """Rebuild a Memory from the columns named in MEMORY_COLUMNS, in that order."""
    (
        id_,
        env,
        layer,
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
        created,
        updated,
        accessed,
        access_count,
        reinforcement_count,
        author,
        metadata,
        details,
        version,
        keyword_context,
    ) = tuple(row)[:24]
    episode = procedure = None
    if details is not None:
        if layer == "episode":
            episode = EpisodeDetails.model_validate_json(details)
        elif layer == "procedure":
            procedure = ProcedureDetails.model_validate_json(details)
    # rows are written only by this store from validated models: skip re-validation
    return Memory.model_construct(
        id=id_,
        environment_id=env,
        layer=Layer(layer),
        content=content,
        category=category,
        tags=json.loads(tags),
        importance=importance,
        confidence=confidence,
        source=Source(source),
        status=Status(status),
        pinned=bool(pinned),
        supersedes=supersedes,
        superseded_by=superseded_by,
        merged_into=merged_into,
        created_at=datetime.fromtimestamp(created, UTC),
        updated_at=datetime.fromtimestamp(updated, UTC),
        last_accessed_at=dt(accessed),
        access_count=access_count,
        reinforcement_count=reinforcement_count,
        author=author,
        metadata=json.loads(metadata),
        episode=episode,
        procedure=procedure,
        keyword_context=keyword_context,
        version=version,
    )


def environment_from_row(row: tuple[Any, ...]) -> Environment:
    id_, name, owner, description, created, metadata = row
    return Environment(
        id=id_,
        name=name,
        owner=owner,
        description=description,
        created_at=datetime.fromtimestamp(created, UTC),
        metadata=json.loads(metadata),
    )


def where(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND, never empty) and their parameters."""
    conds: list[str] = []
    params: list[Any] = []

    def in_list(column: str, values: list[Any]) -> None:
        if values:
            conds.append(f"{alias}.{column} IN ({','.join('?' * len(values))})")
            params.extend(values)

    in_list("environment_id", flt.environment_ids)
    in_list("layer", [v.value for v in flt.layers])
    in_list("category", flt.categories)
    in_list("status", [v.value for v in flt.statuses])
    in_list("id", flt.ids)
    for tag in flt.tags:
        conds.append(f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE value = ?)")
        params.append(tag)
    for column, op, value in (
        ("created_at", ">=", flt.created_after),
        ("created_at", "<", flt.created_before),
        ("updated_at", ">=", flt.updated_after),
        ("updated_at", "<", flt.updated_before),
    ):
        if value is not None:
            conds.append(f"{alias}.{column} {op} ?")
            params.append(value.timestamp())
    if flt.min_importance is not None:
        conds.append(f"{alias}.importance >= ?")
        params.append(flt.min_importance)
    if flt.max_importance is not None:
        conds.append(f"{alias}.importance <= ?")
        params.append(flt.max_importance)
    return (" AND ".join(conds) or "1"), params
