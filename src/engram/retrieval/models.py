"""What search and context assembly return: every result carries its score breakdown."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engram.models import Layer, Memory

Stream = Literal["keyword", "semantic"]


class SearchMode(StrEnum):
    KEYWORD = "keyword"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class Factor(_Out):
    """One factor of the score: its value in [0, 1], its weight, and value × weight."""

    value: float
    weight: float
    contribution: float


class ScoreBreakdown(_Out):
    """Why a memory ranked where it did. ``score`` is the sum of the five contributions."""

    relevance: Factor
    importance: Factor
    confidence: Factor
    recency: Factor
    frequency: Factor
    found_by: list[Stream] = Field(description="Which search streams returned this memory.")
    keyword_score: float | None = Field(None, description="Raw BM25 score (higher is better).")
    keyword_norm: float | None = Field(None, description="BM25 scaled to [0, 1] in this result.")
    semantic_similarity: float | None = Field(None, description="Cosine similarity to the query.")
    semantic_norm: float | None = Field(None, description="Similarity scaled to [0, 1].")
    stream_relevance: float | None = Field(
        None,
        description="Relevance from the keyword and semantic streams alone, before the author "
        "and thread signals.",
    )
    author_named: bool | None = Field(
        None,
        description="Whether the query names this memory's author (None: it names none of "
        "the candidates' authors, and the signal is neutral).",
    )
    thread_support: float | None = Field(
        None,
        description="How strongly the memory's thread (its conversation or session) matches "
        "the query, in [0, 1]; None for a memory without a thread.",
    )
    time_matched: bool | None = Field(
        None,
        description='Whether the memory was recorded within a time the query names ("in '
        'July 2023", "last week"); None when the query names no time.',
    )


class ScoredMemory(_Out):
    memory: Memory
    score: float
    breakdown: ScoreBreakdown
    sources: list[str] = Field(
        default_factory=list,
        description="The ids of the messages this memory was read from (a delivered message: "
        "its own id); read them with GET /conversations/{thread}/messages.",
    )


class SearchResult(_Out):
    query: str
    mode: SearchMode
    items: list[ScoredMemory]
    semantic_available: bool = Field(
        description="False when no embedder is configured (keyword only)."
    )
    took_ms: float


class Supersession(_Out):
    """A fact read from a packed message that a newer fact superseded."""

    fact: str = Field(description="The fact read from the message, now superseded.")
    superseded_by: str = Field(
        description="The current fact that holds what it said now (the end of a chain of "
        "replacements)."
    )
    said_on: str = Field(description="The day (ISO) the current fact was said, or recorded.")


class ContextItem(_Out):
    memory_id: str
    layer: Layer
    score: float
    tokens: int
    text: str
    breakdown: ScoreBreakdown
    said_on: str | None = Field(
        None, description="The day (ISO) it was said, or recorded; also at the start of text."
    )
    author: str | None = None
    thread: str | None = Field(None, description="The conversation or session it came from.")
    sources: list[str] = Field(
        default_factory=list,
        description="The ids of the messages it was read from (a message: its own id).",
    )
    superseded: list[Supersession] = Field(
        default_factory=list,
        description="For a message: the facts read from it that newer facts superseded, each "
        "with the current fact and the day it was said; its text then ends with "
        "'[superseded on DAY by: CURRENT FACT]'. The message stays in the context as what was "
        "said.",
    )


class ContextTier(_Out):
    """One section of the assembled prompt and how much of its budget it used."""

    name: Literal["soul", "facts", "messages", "episodes", "procedures"]
    budget: int = Field(description="The tier's guaranteed share of max_tokens.")
    used: int
    items: list[ContextItem] = Field(default_factory=list)
    dropped: int = Field(0, description="Candidates that qualified but did not fit.")
    duplicates: int = Field(
        0,
        description="Candidates left out because their evidence was already packed (a fact "
        "and its own message, an episode and its messages).",
    )
    note: str = ""


class AssembledContext(_Out):
    """The result of assemble_context: the rendered block and how it was built."""

    text: str = Field(description="The system-prompt block: XML sections, Soul first.")
    tokens: int
    max_tokens: int
    query: str
    environment: str
    tiers: list[ContextTier]
    timings_ms: dict[str, float]
    preview: bool = False
