"""Changing the Soul (``PUT /api/v1/soul/blocks/{name}``, ``POST /soul/snapshots``,
``POST /soul/blocks/{name}/restore``; the MCP tools ``soul_update_block``, ``soul_snapshot``,
``soul_restore``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool

from engram.limits import JSON_NUMBER, InputModel
from engram.requests.fields import Reason, Version
from engram.soul.blocks import BLOCK_NAME_PATTERN, MAX_BLOCK_CHARS
from engram.soul.model import OverrideMode, Section

BlockName = Annotated[str, Field(pattern=BLOCK_NAME_PATTERN)]
BlockText = Annotated[str, Field(max_length=MAX_BLOCK_CHARS)]
Priority = Annotated[int, Field(ge=0, le=100), JSON_NUMBER]
Label = Annotated[str, Field(max_length=500)]
"""A snapshot's label."""


class BlockRequest(InputModel):
    """A block's new text and settings in one layer; what is left out stays as it is."""

    text: BlockText | None = None
    mode: OverrideMode | None = Field(
        default=None, description="In an environment: replace, extend (append) or inherit"
    )
    priority: Priority | None = None
    enabled: StrictBool | None = None
    section: Section | None = Field(default=None, description="Only to create a custom block")
    reason: Reason = ""


class BlockRestoreRequest(InputModel):
    version: Version
    reason: Reason = ""


class SnapshotRequest(InputModel):
    label: Label = ""
