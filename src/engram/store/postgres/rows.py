"""Mapping between value objects and PostgreSQL rows, and the WHERE clause of a MemoryFilter."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from engram.models import Memory, MemoryFilter
from engram.store.columns import MEMORY_FIELDS, RowMapper
from engram.text import content_hash

# the columns written by an upsert, in the order of memory_params()
WRITE_COLUMNS = (*MEMORY_FIELDS, "content_hash", "keyword_text")


def memory_select(alias: str = "m") -> str:
    """The columns memory_from_row() reads, in order (details as JSON text, parsed by the
    model exactly as the SQLite store does)."""
    cols = [f"{alias}.{c}" for c in MEMORY_FIELDS]
    cols[21] = f"{alias}.details::text"
    return ", ".join(cols)


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
        Jsonb(m.tags),
        m.importance,
        m.confidence,
        m.source.value,
        m.pinned,
        m.supersedes,
        m.superseded_by,
        m.merged_into,
        m.created_at,
        m.updated_at,
        m.last_accessed_at,
        m.access_count,
        m.reinforcement_count,
        m.author,
        Jsonb(m.metadata),
        details,
        m.version,
        m.keyword_context,
        m.thread,
        m.recorded_at,
        content_hash(m.search_text()),
        m.keyword_text(),
    )


ROWS = RowMapper(time=lambda value: value)
"""Rows to value objects: psycopg returns timestamps as aware UTC datetimes."""
memory_from_row = ROWS.memory
environment_from_row = ROWS.environment

ENVIRONMENT_COLUMNS = "id, name, owner, description, created_at, metadata"


FILTER_COLUMNS = (
    "id",
    "environment_id",
    "layer",
    "category",
    "status",
    "thread",
    "tags",
    "created_at",
    "updated_at",
    "importance",
)
"""Every column :func:`where` may test."""


def where(flt: MemoryFilter, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL conditions (joined with AND, never empty) and their parameters."""
    conds: list[str] = []
    params: list[Any] = []

    def any_of(column: str, values: list[Any]) -> None:
        if values:
            conds.append(f"{alias}.{column} = ANY(%s)")
            params.append(values)

    any_of("environment_id", flt.environment_ids)
    any_of("layer", [v.value for v in flt.layers])
    any_of("category", flt.categories)
    any_of("status", [v.value for v in flt.statuses])
    any_of("id", flt.ids)
    any_of("thread", flt.threads)
    if flt.tags:
        # jsonb containment: every listed tag is in the array (GIN jsonb_path_ops index)
        conds.append(f"{alias}.tags @> %s")
        params.append(Jsonb(list(flt.tags)))
    for column, op, value in (
        ("created_at", ">=", flt.created_after),
        ("created_at", "<", flt.created_before),
        ("updated_at", ">=", flt.updated_after),
        ("updated_at", "<", flt.updated_before),
    ):
        if value is not None:
            conds.append(f"{alias}.{column} {op} %s")
            params.append(value)
    if flt.min_importance is not None:
        conds.append(f"{alias}.importance >= %s")
        params.append(flt.min_importance)
    if flt.max_importance is not None:
        conds.append(f"{alias}.importance <= %s")
        params.append(flt.max_importance)
    return (" AND ".join(conds) or "true"), params
