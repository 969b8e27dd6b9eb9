"""Answers sized for agents: one line per hit (id, date, text, score) unless details are asked
for, and the token count of the answer itself, so an agent knows what a call costs."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, Field

from engram.models import Layer, Memory
from engram.retrieval.models import AssembledContext, ScoredMemory
from engram.service.context import render_item
from engram.service.superseded import compact_line
from engram.tokens import count_tokens

LINE_CHARS = 200


class Hit(BaseModel):
    id: str
    layer: Layer
    line: str = Field(
        description="The memory as one line: its date, then its text (clipped; a message whose "
        "fact was superseded keeps its mark)."
    )
    score: float
    sources: list[str] = Field(
        default_factory=list, description="The ids of the messages it was read from."
    )


class Recalled(BaseModel):
    query: str
    items: list[Hit]
    details: list[ScoredMemory] | None = Field(
        None, description="Each result in full with its score breakdown (details=true only)."
    )
    result_tokens: int = Field(0, description="Tokens this answer takes (cl100k).")


class Context(BaseModel):
    text: str = Field(description="The prompt block: XML sections, the Soul first.")
    tokens: int = Field(description="Tokens of the block.")
    max_tokens: int
    items: list[Hit]
    details: AssembledContext | None = Field(
        None, description="Tiers, budgets, scores and timings (details=true only)."
    )
    result_tokens: int = Field(0, description="Tokens this answer takes (cl100k).")


def line(memory: Memory) -> str:
    text = render_item(memory).removeprefix("- ").rstrip("\n")
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


M = TypeVar("M", Recalled, Context)


def _counted(answer: M) -> M:
    tokens = count_tokens(answer.model_dump_json(exclude_none=True))
    # the count itself adds a few characters: count once more with it in place
    first = answer.model_copy(update={"result_tokens": tokens})
    return first.model_copy(
        update={"result_tokens": count_tokens(first.model_dump_json(exclude_none=True))}
    )


def recalled(query: str, results: list[ScoredMemory], details: bool) -> Recalled:
    hits = [
        Hit(
            id=r.memory.id,
            layer=r.memory.layer,
            line=line(r.memory),
            score=round(r.score, 3),
            sources=r.sources,
        )
        for r in results
    ]
    return _counted(Recalled(query=query, items=hits, details=results if details else None))


def context(ctx: AssembledContext, details: bool) -> Context:
    hits = [
        Hit(
            id=i.memory_id,
            layer=i.layer,
            line=compact_line(i, LINE_CHARS),
            score=round(i.score, 3),
            sources=i.sources,
        )
        for t in ctx.tiers
        for i in t.items
    ]
    answer = Context(
        text=ctx.text,
        tokens=ctx.tokens,
        max_tokens=ctx.max_tokens,
        items=hits,
        details=ctx if details else None,
    )
    return _counted(answer)
