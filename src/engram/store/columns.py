"""The memory row both stores share: the column order and the one mapping back to a Memory.
Each dialect decodes its own JSON and timestamps, then hands plain values here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.models import EpisodeDetails, Layer, Memory, ProcedureDetails, Source, Status

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
)
"""The memory columns, in the order both stores select them."""


def memory_from_values(
    row: Sequence[Any],
    *,
    tags: list[str],
    metadata: dict[str, Any],
    created: datetime,
    updated: datetime,
    accessed: datetime | None,
) -> Memory:
    """A Memory from a row in ``MEMORY_FIELDS`` order; the dialect passes the fields it had to
    decode (JSON, timestamps). ``details`` is the layer's JSON text."""
    values = dict(zip(MEMORY_FIELDS, tuple(row)[: len(MEMORY_FIELDS)], strict=True))
    layer = Layer(values["layer"])
    details = values["details"]
    episode = procedure = None
    if details is not None:
        if layer is Layer.EPISODE:
            episode = EpisodeDetails.model_validate_json(details)
        elif layer is Layer.PROCEDURE:
            procedure = ProcedureDetails.model_validate_json(details)
    # rows are written only by the stores, from validated models: skip re-validation
    return Memory.model_construct(
        id=values["id"],
        environment_id=values["environment_id"],
        layer=layer,
        content=values["content"],
        category=values["category"],
        tags=tags,
        importance=values["importance"],
        confidence=values["confidence"],
        source=Source(values["source"]),
        status=Status(values["status"]),
        pinned=bool(values["pinned"]),
        supersedes=values["supersedes"],
        superseded_by=values["superseded_by"],
        merged_into=values["merged_into"],
        created_at=created,
        updated_at=updated,
        last_accessed_at=accessed,
        access_count=values["access_count"],
        reinforcement_count=values["reinforcement_count"],
        author=values["author"],
        metadata=metadata,
        episode=episode,
        procedure=procedure,
        keyword_context=values["keyword_context"],
        thread=values["thread"],
        version=values["version"],
    )
