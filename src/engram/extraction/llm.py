"""LLM extraction: ask a configured provider for proposals as JSON, validate the answer against
our schema, and fall back to the LLM-free extractor on any failure (HTTP error, timeout,
malformed answer), so a conversation is never lost."""

from __future__ import annotations

import json
import logging
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engram.extraction.conversation import Transcript
from engram.extraction.proposals import Extraction, Proposal
from engram.extraction.providers import LLMClient, ProviderError
from engram.extraction.rules import RuleExtractor
from engram.models import EpisodeDetails, Layer, ProcedureDetails, Score

log = logging.getLogger(__name__)

MAX_TRANSCRIPT_CHARS = 48_000

SYSTEM_PROMPT = """You extract long-term memories from a conversation.
Return only one JSON object of this shape:
{"facts": [{"content": str, "category": str, "importance": 0-1, "confidence": 0-1,
            "source_message_ids": [str]}],
 "episode": {"summary": str, "key_decisions": [str], "open_questions": [str]} | null,
 "procedures": [{"name": str, "trigger": str, "steps": [str], "source_message_ids": [str]}]}
Facts are atomic, durable statements about the people (identity, preferences, habits,
constraints, decisions, plans), written in the third person with the person's name.
category is one of: preference, identity, habit, constraint, decision, plan, relationship,
event, fact. Procedures are step lists or rules ("always/never/before X do Y").
Use the message ids shown in brackets. Do not invent facts."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore")


class LLMFact(_Strict):
    content: str = Field(min_length=1, max_length=2000)
    category: str = Field(default="fact", pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    importance: Score = 0.5
    confidence: Score = 0.7
    source_message_ids: list[str] = Field(default_factory=list)


class LLMEpisode(_Strict):
    summary: str = Field(min_length=1, max_length=8000)
    key_decisions: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)


class LLMProcedure(_Strict):
    name: str = Field(min_length=1, max_length=200)
    trigger: str = ""
    steps: list[str] = Field(min_length=1, max_length=100)
    source_message_ids: list[str] = Field(default_factory=list)


class LLMAnswer(_Strict):
    """The schema an LLM's answer must follow."""

    facts: list[LLMFact] = Field(default_factory=list)
    episode: LLMEpisode | None = None
    procedures: list[LLMProcedure] = Field(default_factory=list)


def _messages(transcript: Transcript) -> str:
    return "\n".join(
        f"[{m.id}] {m.speaker} ({m.role.value}): {m.content}" for m in transcript.messages
    )


def fits(transcript: Transcript) -> bool:
    """Whether the prompt holds every message of ``transcript`` (else only its newest part)."""
    return len(_messages(transcript)) <= MAX_TRANSCRIPT_CHARS


def render(transcript: Transcript) -> str:
    text = _messages(transcript)
    if len(text) > MAX_TRANSCRIPT_CHARS:  # keep the end: the newest messages matter most
        text = text[-MAX_TRANSCRIPT_CHARS:]
    title = transcript.conversation.title
    part = transcript.summarised
    scope = (
        f"The episode summarises only the messages from [{part[0].id}] on: the earlier ones "
        "are context, summarised already.\n"
        if part and len(part) < len(transcript.messages)
        else ""
    )
    return (f"Conversation: {title}\n" if title else "") + scope + text


_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def parse_answer(text: str) -> LLMAnswer:
    """The answer as our schema; ``ValueError`` (or ``ValidationError``) if it is not one."""
    data = json.loads(_FENCE_RE.sub("", text))
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    return LLMAnswer.model_validate(data)


def to_proposals(answer: LLMAnswer, transcript: Transcript, extractor: str) -> list[Proposal]:
    known = {m.id for m in transcript.messages}
    out: list[Proposal] = []
    for f in answer.facts:
        out.append(
            Proposal(
                content=f.content,
                category=f.category,
                kind=f.category,
                importance=f.importance,
                confidence=f.confidence,
                source_message_ids=[i for i in f.source_message_ids if i in known],
                extractor=extractor,
            )
        )
    for p in answer.procedures:
        out.append(
            Proposal(
                layer=Layer.PROCEDURE,
                content=p.trigger or p.name,
                category="procedure",
                kind="steps",
                importance=0.6,
                confidence=0.7,
                source_message_ids=[i for i in p.source_message_ids if i in known],
                procedure=ProcedureDetails(name=p.name, trigger=p.trigger, steps=p.steps),
                extractor=extractor,
            )
        )
    if answer.episode is not None:
        e = answer.episode
        part = transcript.summarised
        times = [m.created_at for m in part if m.created_at is not None]
        out.append(
            Proposal(
                layer=Layer.EPISODE,
                content=e.summary,
                category="episode",
                kind="episode",
                importance=0.6,
                confidence=0.75,
                source_message_ids=[m.id for m in part],
                episode=EpisodeDetails(
                    period_start=min(times) if times else None,
                    period_end=max(times) if times else None,
                    participants=transcript.model_copy(update={"messages": part}).participants,
                    conversation_id=transcript.conversation.id,
                    key_decisions=e.key_decisions,
                    open_questions=e.open_questions,
                ),
                extractor=extractor,
            )
        )
    return out


class LLMExtractor:
    """Extraction through an LLM, with the rules as the fallback."""

    def __init__(self, client: LLMClient, fallback: RuleExtractor | None = None) -> None:
        self.client = client
        self.fallback = fallback or RuleExtractor()
        self.name = f"llm:{client.config.name}"

    def run(self, transcript: Transcript) -> Extraction:
        try:
            text = self.client.complete(SYSTEM_PROMPT, render(transcript))
            answer = parse_answer(text)
            proposals = to_proposals(answer, transcript, self.name)
        except ProviderError as exc:
            reason = exc.message
        except (ValueError, ValidationError) as exc:
            reason = f"{self.client.config.name}: malformed answer ({type(exc).__name__})"
        else:
            whole = fits(transcript)
            return Extraction(proposals=proposals, extractor=self.name, whole=whole)
        log.warning("LLM extraction failed, using the rules instead: %s", reason)
        return Extraction(
            proposals=self.fallback.extract(transcript),
            extractor=self.fallback.name,
            fallback_reason=reason,
        )
