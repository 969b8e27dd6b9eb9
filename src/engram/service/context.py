"""Context assembly: the evidence for a query packed into a token budget, Soul first.

Search the three layers (delivered messages are episodes of category ``message``), keep the
memories that qualify (cosine over their layer's floor, or stream relevance over
``ScoringConfig.context_relevance``), and pack them in two passes: each tier first gets its
guaranteed share of ``max_tokens`` (``Budgets``), then whatever is left goes to the best
remaining candidates of any tier, until the budget is full or nothing qualifies. Caps on the
number of items per tier are optional. One piece of evidence takes one slot: an extracted fact
and the message it came from are not both packed, nor an episode whose messages are all in.
Every line carries its date (when it was said, or recorded); a message whose fact a newer one
superseded ends with a mark naming it (``service.superseded``). Tokens are counted with a real
tokenizer, and the rendered block never exceeds ``max_tokens``.

The block's tokens are the sum of its parts' (the Soul, each section's tags, each line), each
counted once, with no count of the whole: every part ends in one newline after a non-space
character and the next starts with ``<`` or ``-``. cl100k's pre-tokenizer ends a piece at such
a newline (a piece holding a newline goes on only over whitespace) and the BPE encodes each
piece alone, so no token spans two parts (tested on adversarial texts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from html import escape
from typing import Literal, NamedTuple

from engram.actors import Actor
from engram.clock import Clock
from engram.errors import InvalidInput
from engram.extraction.turns import is_message, message_id_of, source_ids
from engram.hashed import HashedMemo
from engram.limits import MAX_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS
from engram.models import MESSAGE_CATEGORY, Environment, Layer, Memory, MemoryFilter
from engram.retrieval.models import (
    AssembledContext,
    ContextItem,
    ContextTier,
    ScoreBreakdown,
    ScoredMemory,
    SearchMode,
    Supersession,
)
from engram.service.environments import EnvironmentService
from engram.service.search import Ranked, Scoring, SearchService
from engram.service.superseded import MARK, Replaced, SupersededFacts
from engram.store import Store
from engram.tokens import count_tokens
from engram.trusted import construct

TierName = Literal["facts", "messages", "episodes", "procedures"]


@dataclass(frozen=True)
class SoulTier:
    """What the Soul tier contributes: rendered text, its tokens, and a note on truncation."""

    text: str
    tokens: int
    note: str = ""


SoulRenderer = Callable[[Actor, Environment, int], SoulTier]
"""The Soul's tier for an environment already resolved (not read again)."""


@dataclass(frozen=True)
class Budgets:
    """Guaranteed shares of ``max_tokens`` per tier; what a tier leaves unused, and whatever
    no share claims, goes to the best remaining candidates of any tier."""

    soul: float = 0.25
    facts: float = 0.3
    messages: float = 0.15
    episodes: float = 0.1
    procedures: float = 0.05

    def __post_init__(self) -> None:
        shares = (self.soul, self.facts, self.messages, self.episodes, self.procedures)
        if any(s < 0 for s in shares) or sum(shares) > 1.0001:
            raise InvalidInput("tier budgets must be non-negative shares that sum to at most 1")

    def share(self, tier: TierName) -> float:
        return float(getattr(self, tier))


TIERS: tuple[TierName, ...] = ("facts", "messages", "episodes", "procedures")
_TAGS: dict[TierName, str] = {
    "facts": "memories",
    "messages": "conversation",
    "episodes": "episodes",
    "procedures": "procedures",
}
MIN_TOKENS, MAX_TOKENS = MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS
MAX_ITEMS = 1000
KEYWORD_POOL = 100
TOKENS_PER_CANDIDATE = 25
"""Candidates kept per layer: one per this many tokens of budget (20 to 200)."""
STREAM_DEPTH = 1.5
"""Each stream's candidates per layer, as a multiple of the candidates kept (at least 100)."""
READ_AHEAD = 16
"""Memories read at least at once when packing reaches one not read yet: as many more as the
budget left could hold at ``TOKENS_PER_CANDIDATE`` tokens each (one read for most packings: on
PostgreSQL each read is a round trip)."""


def tier_of(memory: Memory) -> TierName:
    return _tier(memory.layer, memory.category)


def _tier(layer: Layer, category: str) -> TierName:
    if layer is Layer.FACT:
        return "facts"
    if layer is Layer.PROCEDURE:
        return "procedures"
    return "messages" if category == MESSAGE_CATEGORY else "episodes"


def said_on(memory: Memory) -> str:
    """The day a memory was said (a message, an extracted memory: its messages' time) or
    recorded."""
    start = memory.episode.period_start if memory.episode is not None else None
    return (start or memory.created_at).date().isoformat()


def render_item(memory: Memory) -> str:
    """One memory as one line of the prompt, starting with its date."""
    return _render(memory, " ".join(memory.content.split()), said_on(memory))


def _mark(replaced: Sequence[Replaced]) -> str:
    """What ends the line of a message whose facts ``replaced`` ('' for none)."""
    parts = [f"{said_on(r.current)} by: {r.quote}" for r in replaced]
    return MARK + "; on ".join(parts) + "]" if parts else ""


def _render(memory: Memory, text: str, day: str, mark: str = "") -> str:
    """:func:`render_item` of ``memory`` whose content is ``text`` (whitespace collapsed),
    said on ``day``, and ``mark`` (:func:`_mark`) at its end."""
    when = f"({day}) "
    if memory.procedure is not None:
        proc = memory.procedure
        steps = " ".join(f"{n}. {s}" for n, s in enumerate(proc.steps, 1))
        trigger = f" (when: {proc.trigger})" if proc.trigger else ""
        line = f"{when}{proc.name}{trigger}: {text}" + (f" Steps: {steps}" if steps else "")
    elif is_message(memory):
        line = when + text
    elif memory.episode is not None:
        line = when + text
        # a captured session's summary already says its decisions: not twice
        decisions = [d for d in memory.episode.key_decisions if " ".join(d.split()) not in text]
        if decisions:
            line += " Decisions: " + "; ".join(decisions)
    else:
        line = f"{when}[{memory.category}] {text}"
    line = line.rstrip() + mark
    # no whitespace before the newline: the line's tokens alone are its tokens in the block
    return "- " + escape(line.rstrip(), quote=False) + "\n"


@lru_cache(maxsize=1)
def _overheads() -> dict[TierName, int]:
    return {t: count_tokens(f"<{_TAGS[t]}>\n</{_TAGS[t]}>\n") for t in TIERS}


line_tokens = HashedMemo(count_tokens, maxsize=50_000)
"""The tokens of one rendered line (lines recur across queries: counted once)."""


@lru_cache(maxsize=1)
def min_line_tokens() -> int:
    """No rendered line is shorter than this (its date, then at least one token): once less
    is left, nothing more fits."""
    return count_tokens("- (2000-01-01)") + 1


class _Entry(NamedTuple):
    """What packing needs of one memory, worked out once per assembly (a memory is offered
    to each walk that reaches it)."""

    memory: Memory
    tier: TierName
    key: str
    """Its text, whitespace collapsed and case-folded: the same text is one piece of
    evidence."""
    own: str | None
    """Its message id (a delivered message)."""
    sources: list[str]
    line: str
    tokens: int
    said_on: str
    superseded: list[Supersession]
    """For a message: the facts read from it that newer ones superseded."""


def _entry(memory: Memory, replaced: Sequence[Replaced] = ()) -> _Entry:
    """``replaced``: for a message, its superseded facts and what replaced them."""
    text = " ".join(memory.content.split())
    day = said_on(memory)
    line = _render(memory, text, day, _mark(replaced))
    own = message_id_of(memory)
    sources = [own] if own is not None else source_ids(memory)
    tier = _tier(memory.layer, memory.category)
    superseded = [
        Supersession(fact=r.fact, superseded_by=r.current.id, said_on=said_on(r.current))
        for r in replaced
    ]
    key = text.casefold()
    return _Entry(memory, tier, key, own, sources, line, line_tokens(line), day, superseded)


Scorer = Callable[[str], tuple[float, ScoreBreakdown]]
"""A packed candidate's score and breakdown, by memory id (asked only once it is packed)."""


class _Pool:
    """The qualifying candidates, best first; each memory is read only when packing reaches
    it (with the next few of the same walk, in one read), and its score's breakdown is built
    only once it is packed."""

    def __init__(
        self,
        order: Sequence[tuple[str, TierName]],
        load: Callable[[list[str]], list[Memory]],
        scored: Scorer,
        superseded: SupersededFacts,
    ) -> None:
        self.order = list(order)
        self._load = load
        self.scored = scored
        self._superseded = superseded
        self._loaded: dict[str, Memory] = {}
        self._gone: set[str] = set()
        self._entries: dict[str, _Entry] = {}

    def of(self, tier: TierName) -> list[tuple[str, TierName]]:
        return [o for o in self.order if o[1] == tier]

    def get(self, walk: Sequence[tuple[str, TierName]], at: int, room: int) -> _Entry | None:
        """The memory at ``walk[at]`` (its entry), read with those after it that ``room``
        tokens could hold."""
        memory_id = walk[at][0]
        entry = self._entries.get(memory_id)
        if entry is not None:
            return entry
        if memory_id not in self._loaded and memory_id not in self._gone:
            ahead = max(READ_AHEAD, room // TOKENS_PER_CANDIDATE + 1)
            chunk = [i for i, _ in walk[at:] if i not in self._loaded and i not in self._gone][
                :ahead
            ]
            read = self._load(chunk)
            for m in read:
                self._loaded[m.id] = m
            self._gone.update(i for i in chunk if i not in self._loaded)
            self._superseded.read(read)
        memory = self._loaded.get(memory_id)
        if memory is None:
            return None
        entry = self._entries[memory_id] = _entry(memory, self._superseded.of(memory))
        return entry


@dataclass
class _Packing:
    """The state of one packing: what is in, what it covers, what it cost."""

    budget: int
    caps: dict[TierName, int | None]
    used: int = 0
    items: dict[TierName, list[tuple[Memory, ContextItem]]] = field(
        default_factory=lambda: {t: [] for t in TIERS}
    )
    chosen: set[str] = field(default_factory=set)
    messages_in: set[str] = field(default_factory=set)
    """Message ids packed as messages."""
    facts_from: set[str] = field(default_factory=set)
    """Message ids that a packed fact was read from."""
    texts: set[str] = field(default_factory=set)
    dropped: dict[TierName, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    duplicates: dict[TierName, int] = field(default_factory=lambda: dict.fromkeys(TIERS, 0))
    overhead: dict[TierName, int] = field(default_factory=lambda: _overheads())

    def tier_used(self, tier: TierName) -> int:
        items = self.items[tier]
        return sum(i.tokens for _, i in items) + (self.overhead[tier] if items else 0)

    def full(self, tier: TierName) -> bool:
        cap = self.caps[tier]
        return cap is not None and len(self.items[tier]) >= cap

    def duplicate(self, entry: _Entry) -> bool:
        """Whether the evidence of ``entry`` is already in: its text, its message (packed, or
        the source of a packed fact), or every message it was read from."""
        if entry.key in self.texts:
            return True
        if entry.own is not None:
            return entry.own in self.facts_from or entry.own in self.messages_in
        if not entry.sources:
            return False
        if entry.memory.layer is Layer.FACT:
            return all(s in self.messages_in for s in entry.sources)
        return all(s in self.messages_in or s in self.facts_from for s in entry.sources)

    def offer(self, entry: _Entry, scored: Scorer, limit: int) -> bool:
        """Pack ``entry`` if it fits ``limit`` tokens (of its tier, or in all) and is new
        (``scored``: its score and breakdown, asked only then)."""
        memory, tier = entry.memory, entry.tier
        if memory.id in self.chosen:
            return False
        items = self.items[tier]
        cap = self.caps[tier]
        if cap is not None and len(items) >= cap:
            return False
        if self.duplicate(entry):
            self.duplicates[tier] += 1
            self.chosen.add(memory.id)
            return False
        tokens = entry.tokens
        cost = tokens + (0 if items else self.overhead[tier])
        if self.used + cost > min(limit, self.budget):
            self.dropped[tier] += 1
            return False
        self.used += cost
        self.chosen.add(memory.id)
        self.texts.add(entry.key)
        if entry.own is not None:
            self.messages_in.add(entry.own)
        elif memory.layer is Layer.FACT:
            self.facts_from.update(entry.sources)
        score, breakdown = scored(memory.id)
        items.append(
            (
                memory,
                # every field computed here from a stored memory: no re-validation
                construct(
                    ContextItem,
                    {
                        "memory_id": memory.id,
                        "layer": memory.layer,
                        "score": score,
                        "tokens": tokens,
                        "text": entry.line[:-1],  # without its newline
                        "breakdown": breakdown,
                        "said_on": entry.said_on,
                        "author": memory.author,
                        "thread": memory.thread,
                        "sources": list(entry.sources),
                        "superseded": list(entry.superseded),
                    },
                ),
            )
        )
        return True


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
        max_facts: int | None = None,
        max_episodes: int | None = None,
        max_procedures: int | None = None,
        max_messages: int | None = None,
        budgets: Budgets | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        preview: bool = False,
    ) -> AssembledContext:
        """Build the system-prompt block for ``query`` (empty: a start-of-session brief ranked
        by importance, confidence, recency and frequency). ``max_*``: optional caps on the
        items of a tier (None: as many as the budget holds). ``preview`` shows what would be
        sent without counting accesses."""
        if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
            raise InvalidInput(
                f"max_tokens must be between {MIN_TOKENS} and {MAX_TOKENS}, got {max_tokens}"
            )
        caps: dict[TierName, int | None] = {
            "facts": max_facts,
            "messages": max_messages,
            "episodes": max_episodes,
            "procedures": max_procedures,
        }
        for tier, cap in caps.items():
            if cap is not None and not 0 <= cap <= MAX_ITEMS:
                name = "max_" + tier
                raise InvalidInput(f"{name} must be between 0 and {MAX_ITEMS}, got {cap}")
        budgets = budgets or Budgets()
        t0 = time.perf_counter()
        env = self._envs.resolve(environment, actor)
        timings: dict[str, float] = {}

        tiers: list[ContextTier] = []
        parts: list[str] = []
        soul_budget = int(max_tokens * budgets.soul)
        soul_used = soul_tokens = 0
        if self.soul is not None and soul_budget > 0:
            block = self.soul(actor, env, soul_budget)
            tiers.append(
                ContextTier(name="soul", budget=soul_budget, used=block.tokens, note=block.note)
            )
            if block.text:
                parts.append(block.text.rstrip() + "\n")
                soul_tokens = count_tokens(parts[0])
            soul_used = block.tokens
        timings["soul_ms"] = _ms(t0)

        t1 = time.perf_counter()
        candidates = self._candidates(query, env.id, mode, max_tokens, caps)
        timings["search_ms"] = _ms(t1)

        t2 = time.perf_counter()
        packing = _Packing(budget=max_tokens - soul_used, caps=caps)
        for tier in TIERS:  # each tier's guaranteed share first
            share = int(max_tokens * budgets.share(tier))
            self._walk(candidates, candidates.of(tier), packing, packing.used + share)
        packing.dropped = dict.fromkeys(TIERS, 0)
        # then the best of what is left, whatever its tier
        self._walk(candidates, candidates.order, packing, packing.budget)
        for tier in TIERS:
            tiers.append(self._tier(tier, packing, int(max_tokens * budgets.share(tier))))
            text = _section(tier, [i for _, i in self._ordered(tier, packing)])
            if text:
                parts.append(text)
        text = "".join(parts)
        tokens = soul_tokens + packing.used  # exact (module docstring)
        trimmed = False
        while tokens > max_tokens and parts:  # the Soul took more than it said; trim
            parts.pop()
            text = "".join(parts)
            tokens = count_tokens(text)
            trimmed = True
        timings["pack_ms"] = _ms(t2)

        # untrimmed, every packed line is in the text (no search of it for each)
        included = [i.memory_id for t in tiers for i in t.items if not trimmed or i.text in text]
        if included and not preview:
            self._search.accesses.record(included, self._clock())
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

    @staticmethod
    def _walk(
        pool: _Pool, walk: Sequence[tuple[str, TierName]], packing: _Packing, limit: int
    ) -> None:
        """Offer the candidates of ``walk`` in order until ``limit`` tokens are used; those
        left once nothing more can fit count as dropped."""
        smallest = min_line_tokens()
        for at, (memory_id, tier) in enumerate(walk):
            if memory_id in packing.chosen or packing.full(tier):
                continue
            if min(limit, packing.budget) - packing.used < smallest:
                packing.dropped[tier] += 1
                continue
            # read ahead for the whole budget left: the walks after this one reach them too
            entry = pool.get(walk, at, packing.budget - packing.used)
            if entry is not None:
                packing.offer(entry, pool.scored, limit)

    @staticmethod
    def _ordered(tier: TierName, packing: _Packing) -> list[tuple[Memory, ContextItem]]:
        items = packing.items[tier]
        if tier != "messages":
            return items
        # the turns of a conversation read best in the order they were said
        return sorted(
            items,
            key=lambda p: (
                p[0].created_at,
                p[0].thread or "",
                int(p[0].metadata.get("position", 0) or 0),
            ),
        )

    def _tier(self, tier: TierName, packing: _Packing, share: int) -> ContextTier:
        return ContextTier(
            name=tier,
            budget=share,
            used=packing.tier_used(tier),
            items=[i for _, i in self._ordered(tier, packing)],
            dropped=packing.dropped[tier],
            duplicates=packing.duplicates[tier],
        )

    def _candidates(
        self,
        query: str,
        env_id: str,
        mode: SearchMode,
        max_tokens: int,
        caps: dict[TierName, int | None],
    ) -> _Pool:
        """Every qualifying candidate of every layer, best first (read lazily)."""
        superseded = SupersededFacts(self._store, env_id)
        pool = max(20, min(200, max_tokens // TOKENS_PER_CANDIDATE))
        layers = {
            Layer.FACT: caps["facts"],
            Layer.EPISODE: _largest(caps["episodes"], caps["messages"]),
            Layer.PROCEDURE: caps["procedures"],
        }
        wanted = {layer: cap for layer, cap in layers.items() if cap != 0}
        if not query.strip():
            ranked: list[ScoredMemory] = []
            for layer, cap in wanted.items():
                limit = pool if cap is None else min(pool, max(cap * 3, 10))
                flt = MemoryFilter(environment_ids=[env_id], layers=[layer])
                ranked += self._search.rank(query, flt, mode=mode, limit=limit)
            ranked.sort(key=lambda r: (-r.score, r.memory.id))
            order = [(r.memory.id, tier_of(r.memory)) for r in ranked]
            brief = {r.memory.id: r for r in ranked}
            return _Pool(
                order,
                lambda ids: [brief[i].memory for i in ids],
                lambda i: (brief[i].score, brief[i].breakdown),
                superseded,
            )
        # one keyword query for all layers, each taking the hits of its own
        everything = MemoryFilter(environment_ids=[env_id], layers=list(layers))
        limits = {
            layer: pool if cap is None else min(pool, max(cap * 3, 10))
            for layer, cap in wanted.items()
        }
        requests = [
            Scoring(
                MemoryFilter(environment_ids=[env_id], layers=[layer]),
                max(100, int(limit * STREAM_DEPTH)),
            )
            for layer, limit in limits.items()
        ]
        # the layers scored together: one vector search and one rank-field read for all
        every = self._search.score_many(
            query, requests, mode=mode, keyword=(everything, KEYWORD_POOL)
        )
        scored: list[Ranked] = []
        for (layer, limit), found in zip(limits.items(), every, strict=True):
            scored += self._qualifying(found, layer)[:limit]
        scored.sort(key=lambda r: (-r.score, r.memory_id))
        by_id = {r.memory_id: r for r in scored}
        order = [(r.memory_id, _tier(r.layer, r.category)) for r in scored]
        return _Pool(
            order,
            self._store.get,
            lambda i: (by_id[i].score, self._search.breakdown_of(by_id[i])),
            superseded,
        )

    def _qualifying(self, ranked: Sequence[Ranked], layer: Layer) -> list[Ranked]:
        cfg = self._search.scoring
        floor = cfg.similarity_floor(layer, self._search.model_id)
        return [
            r
            for r in ranked
            if (r.fused.similarity or 0.0) >= floor
            or (r.fused.relevance or 0.0) >= cfg.context_relevance
        ]


def _largest(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)


def _section(tier: TierName, items: Sequence[ContextItem]) -> str:
    if not items:
        return ""
    tag = _TAGS[tier]
    return f"<{tag}>\n" + "".join(i.text + "\n" for i in items) + f"</{tag}>\n"


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
