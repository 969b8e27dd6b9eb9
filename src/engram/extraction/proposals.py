"""What an extractor proposes: a candidate memory with where it came from, not yet stored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from engram.models import (
    Category,
    Content,
    EpisodeDetails,
    Layer,
    NewMemory,
    ProcedureDetails,
    Score,
    Source,
)


class Proposal(BaseModel):
    """A candidate memory. ``kind`` is finer than the category (e.g. 'allergy' under
    'constraint'); ``source_message_ids`` name the messages it was read from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    layer: Layer = Layer.FACT
    content: Content
    category: Category = "fact"
    kind: str = "fact"
    importance: Score = 0.5
    confidence: Score = 0.7
    subject: str | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    episode: EpisodeDetails | None = None
    procedure: ProcedureDetails | None = None
    extractor: str = "rules"

    def to_new_memory(self, conversation_id: str | None = None) -> NewMemory:
        metadata: dict[str, Any] = {
            "extractor": self.extractor,
            "kind": self.kind,
            "source_message_ids": self.source_message_ids,
        }
        if conversation_id is not None:
            metadata["conversation_id"] = conversation_id
        if self.subject:
            metadata["subject"] = self.subject
        return NewMemory(
            layer=self.layer,
            content=self.content,
            category=self.category,
            tags=self.tags,
            importance=self.importance,
            confidence=self.confidence,
            source=Source.EXTRACTED,
            author=self.subject,
            thread=conversation_id,
            metadata=metadata,
            episode=self.episode,
            procedure=self.procedure,
        )


class Extraction(BaseModel):
    """What one extractor run proposed, which extractor produced it, and why the LLM-free
    path was used instead of an LLM (when it was)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    proposals: list[Proposal]
    extractor: str
    fallback_reason: str | None = None
    whole: bool = True
    """Whether the extractor read every message it was given (an LLM's prompt keeps only the
    newest part of a long transcript): only then does its episode summarise all of them."""
