"""What an extraction call takes and returns, shared by the service and the SDK (no I/O)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from engram.extraction.conversation import NewConversation, NewMessage
from engram.extraction.proposals import Proposal
from engram.limits import MAX_MESSAGES, InputModel


class ConversationInput(InputModel):
    """A conversation and its messages, as an import or an API call delivers them."""

    conversation: NewConversation = Field(default_factory=NewConversation)
    messages: list[NewMessage] = Field(max_length=MAX_MESSAGES)


class ProposalOutcome(BaseModel):
    """What happened to one proposal when stored: 'created', 'merged', 'superseded',
    'outdated', 'queued' (the lifecycle's word for it) and the memory that now holds it."""

    model_config = ConfigDict(frozen=True)

    proposal: int
    action: str
    memory_id: str | None = None
    related_id: str | None = Field(
        default=None,
        description="the memory it was merged into or superseded, or (outdated) the newer "
        "fact that supersedes it, if any",
    )


class ExtractionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    conversation_id: str | None
    dry_run: bool
    extractor: str
    fallback_reason: str | None = None
    proposals: list[Proposal] = Field(default_factory=list)
    outcomes: list[ProposalOutcome] = Field(default_factory=list)
    stored_via: str | None = Field(
        default=None, description="'lifecycle.remember' when proposals were stored"
    )
    messages_added: int = 0
    redactions: dict[str, int] = Field(
        default_factory=dict,
        description="Secrets the scrubber removed from the conversation and its messages "
        "before anything was stored or extracted, as kind -> count (a message delivered "
        "again is not stored again, and its secrets are not counted again).",
    )

    def memory_ids(self, action: str) -> list[str]:
        return [o.memory_id for o in self.outcomes if o.action == action and o.memory_id]
