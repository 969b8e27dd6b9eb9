"""Context assembly: the best of every layer packed into a token budget, Soul first.

Search all three layers, keep the memories that clear their layer's threshold, take up to
``max_facts`` facts (and a few episodes and procedures), and pack them by score into per-tier
token budgets; budget a tier leaves unused flows to the next. Tokens are counted with a real
tokenizer, and the rendered block never exceeds ``max_tokens``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Literal

from engram.actors import Actor
from engram.clock import Clock
from engram.errors import InvalidInput
from engram.limits import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS
from engram.models import Layer, Memory, MemoryFilter
from engram.retrieval.models import (
    AssembledContext,
    ContextItem,
    ContextTier,
    ScoredMemory,
    SearchMode,
)
from engram.service.environments import EnvironmentService
from engram.service.search import SearchService
from engram.store import Store
from engram.tokens import count_tokens

TierName = Literal["facts", "episodes", "procedures"]


@dataclass(frozen=True)
class SoulBlock:
    """What the Soul tier contributes: rendered text, its tokens, and a note on truncation."""

    text: str
    tokens: int
    note: str = ""


SoulRenderer = Callable[[Actor, str | None, int], SoulBlock]


@dataclass(frozen=True)
class Budgets:
    """Shares of ``max_tokens`` per tier (unused budget flows down the list)."""

    soul: float = 0.25
    facts: float = 0.45
    episodes: float = 0.2
    procedures: float = 0.1

    def __post_init__(self) -> None:
        shares = (self.soul, self.facts, self.episodes, self.procedures)
        if any(s < 0 for s in shares) or sum(shares) > 1.0001:
            raise InvalidInput("tier budgets must be non-negative shares that sum to at most 1")


_TAGS: dict[TierName, str] = {
    "facts": "memories",
    "episodes": "episodes",
    "procedures": "procedures",
}
_LAYERS: dict[TierName, Layer] = {
    "facts": Layer.FACT,
    "episodes": Layer.EPISODE,
    "procedures": Layer.PROCEDURE,
}
MIN_TOKENS, MAX_TOKENS = MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS
KEYWORD_POOL = 100


def render_item(memory: Memory) -> str:
    """One memory as one line of the prompt."""
    text = " ".join(memory.content.split())
    if memory.procedure is not None:
        proc = memory.procedure
        steps = " ".join(f"{n}. {s}" for n, s in enumerate(proc.steps, 1))
        when = f" (when: {proc.trigger})" if proc.trigger else ""
        line = f"{proc.name}{when}: {text}" + (f" Steps: {steps}" if steps else "")
    elif memory.episode is not None:
        start = memory.episode.period_start or memory.created_at
        line = f"({start.date().isoformat()}) {text}"
        if memory.episode.key_decisions:
            line += " Decisions: " + "; ".join(memory.episode.key_decisions)
    else:
        line = f"[{memory.category}] {text}"
    return "- " + escape(line, quote=False) + "\n"


class ContextService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        environments: EnvironmentService,
        search: SearchService,
        soul: SoulRenderer | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._envs = environments
        self._search = search
        self.soul = soul

    def assemble(
        self,
        actor: Actor,
        query: str = "",
        *,
        environment: str | None = None,
        max_tokens: int = 2000,
        max_facts: int = 15,
        max_episodes: int = 3,
        max_procedures: int = 3,
        budgets: Budgets | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        preview: bool = False,
    ) -> AssembledContext:
        """Build the system-prompt block for ``query`` (empty: a start-of-session brief ranked
        by importance, confidence, recency and frequency). ``preview`` shows what would be sent
        without counting accesses."""
        if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
            raise InvalidInput(
                f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS}, got {max_tokens}"
            )
        for name, value in (("max_facts", max_facts), ("max_episodes", max_episodes)):
            if not 0 <= value <= 100:
                raise InvalidInput(f"{name} must be between 0 and 100, got {value}")
        if not 0 <= max_procedures <= 100:
            raise InvalidInput(f"max_procedures must be between 0 and 100, got {max_procedures}")
        budgets = budgets or Budgets()
        t0 = time.perf_counter()
        env = self._envs.resolve(environment, actor)
        timings: dict[str, float] = {}

        tiers: list[ContextTier] = []
        parts: list[str] = []
        carry = 0
        soul_budget = int(max_tokens * budgets.soul)
        if self.soul is not None and soul_budget > 0:
            block = self.soul(actor, env.id, soul_budget)
            tiers.append(
                ContextTier(name="soul", budget=soul_budget, used=block.tokens, note=block.note)
            )
            if block.text:
                parts.append(block.text.rstrip("\n") + "\n")
            carry = soul_budget - block.tokens
        else:
            carry = soul_budget
        timings["soul_ms"] = _ms(t0)

        t1 = time.perf_counter()
        limits: dict[TierName, int] = {
            "facts": max_facts,
            "episodes": max_episodes,
            "procedures": max_procedures,
        }
        keyword: dict[Layer, dict[str, float]] | None = None
        if query.strip() and mode is not SearchMode.SEMANTIC:
            # one keyword query for all three layers; the vector scan is shared the same way
            everything = MemoryFilter(environment_ids=[env.id], layers=list(_LAYERS.values()))
            keyword = self._search.keyword_by_layer(query, everything, KEYWORD_POOL)
        candidates = {
            tier: self._candidates(
                query,
                env.id,
                _LAYERS[tier],
                limit,
                mode,
                None if keyword is None else keyword[_LAYERS[tier]],
            )
            for tier, limit in limits.items()
        }
        timings["search_ms"] = _ms(t1)

        t2 = time.perf_counter()
        included: list[str] = []
        shares: list[tuple[TierName, float]] = [
            ("facts", budgets.facts),
            ("episodes", budgets.episodes),
            ("procedures", budgets.procedures),
        ]
        for tier, share in shares:
            budget = int(max_tokens * share) + carry
            packed, text = self._pack(tier, candidates[tier], limits[tier], budget)
            tiers.append(packed)
            if text:
                parts.append(text)
            included.extend(i.memory_id for i in packed.items)
            carry = budget - packed.used
        text = "".join(parts)
        tokens = count_tokens(text)
        while tokens > max_tokens and parts:  # BPE merges across lines; trim to be exact
            parts.pop()
            text = "".join(parts)
            tokens = count_tokens(text)
        timings["pack_ms"] = _ms(t2)

        if included and not preview:
            self._store.record_access(included, self._clock())
        timings["total_ms"] = _ms(t0)
        return AssembledContext(
            text=text,
            tokens=tokens,
            max_tokens=max_tokens,
            query=query,
            environment=env.name,
            tiers=tiers,
            timings_ms=timings,
            preview=preview,
        )

    def _candidates(
        self,
        query: str,
        env_id: str,
        layer: Layer,
        limit: int,
        mode: SearchMode,
        keyword: dict[str, float] | None,
    ) -> list[ScoredMemory]:
        if limit == 0:
            return []
        flt = MemoryFilter(environment_ids=[env_id], layers=[layer])
        ranked = self._search.rank(
            query, flt, mode=mode, limit=min(200, max(limit * 3, 10)), keyword=keyword
        )
        if not query.strip():
            return ranked
        cfg = self._search.scoring
        floor = cfg.similarity_floor(layer, self._search.model_id)
        return [
            r
            for r in ranked
            if (r.breakdown.semantic_similarity or 0.0) >= floor
            or (r.breakdown.keyword_norm or 0.0) >= cfg.min_keyword_norm
        ]

    def _pack(
        self, tier: TierName, ranked: list[ScoredMemory], limit: int, budget: int
    ) -> tuple[ContextTier, str]:
        tag = _TAGS[tier]
        head, tail = f"<{tag}>\n", f"</{tag}>\n"
        overhead = count_tokens(head + tail)
        items: list[ContextItem] = []
        used = overhead
        dropped = 0
        for r in ranked:
            if len(items) >= limit:
                break
            line = render_item(r.memory)
            cost = count_tokens(line)
            if used + cost > budget:
                dropped += 1
                continue
            used += cost
            items.append(
                ContextItem(
                    memory_id=r.memory.id,
                    layer=r.memory.layer,
                    score=r.score,
                    tokens=cost,
                    text=line.rstrip("\n"),
                    breakdown=r.breakdown,
                )
            )
        if not items:
            return ContextTier(name=tier, budget=budget, used=0, dropped=dropped), ""
        body = head + "".join(i.text + "\n" for i in items) + tail
        return ContextTier(name=tier, budget=budget, used=used, items=items, dropped=dropped), body


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
