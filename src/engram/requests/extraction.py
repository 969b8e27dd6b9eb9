"""Extraction from a conversation (``POST /api/v1/extract``, the MCP tool
``extract_memories``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool

from engram.extraction.conversation import NewMessage
from engram.extraction.results import ConversationInput
from engram.limits import MAX_MESSAGES
from engram.requests.fields import EnvironmentRef

CONVERSATION_REF_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
"""A conversation named by its 'cnv_…' id or the caller's own id for it."""
ConversationRef = Annotated[str, Field(pattern=CONVERSATION_REF_PATTERN)]
Messages = Annotated[
    list[NewMessage],
    Field(min_length=1, max_length=MAX_MESSAGES, description="The turns, oldest first."),
]


class ExtractRequest(ConversationInput):
    """A conversation (optional) and its messages, oldest first."""

    messages: Messages
    dry_run: StrictBool = Field(default=False, description="Only propose: store nothing")
    environment: EnvironmentRef | None = Field(
        default=None, description="Name or id; default: yours"
    )
