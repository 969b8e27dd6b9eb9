"""Remembering and editing memories. The model of a new memory is
:class:`engram.models.NewMemory` (REST: ``/memories/remember``, ``/facts``, ``/episodes``,
``/procedures``; MCP: ``remember``, ``create_episode``, ``create_procedure``) and of an edit
:class:`engram.models.MemoryPatch` (``update_memory``); the MCP tools take their fields flat,
typed by the same aliases of :mod:`engram.models`. The smaller operations' models are here."""

from __future__ import annotations

from pydantic import Field

from engram.lifecycle.feedback import FeedbackKind
from engram.limits import InputModel
from engram.requests.fields import Reason, Version


class RestoreRequest(InputModel):
    """Bring a memory back (``POST /{layer}s/{id}/restore``, ``restore_memory``)."""

    version: Version | None = Field(default=None, description="default: the last active one")
    reason: Reason = ""


class OutcomeRequest(InputModel):
    """A procedure's run (``POST /procedures/{id}/success|failure``,
    ``record_procedure_outcome``)."""

    note: Reason = ""


class FeedbackRequest(InputModel):
    """How a memory held up (``POST /memories/{id}/feedback``, ``feedback``)."""

    kind: FeedbackKind = Field(description="helpful +0.1 confidence, outdated -0.25, wrong -0.5")
    note: Reason = Field(default="", description="What was wrong or what changed")
