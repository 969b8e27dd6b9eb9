"""Context assembly: tiers, thresholds, budgets (never exceeded), Soul first, access counting."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import LOCAL, Engram, Layer, NewMemory
from engram.extraction.turns import source_ids
from engram.models import EpisodeDetails, Memory, ProcedureDetails
from engram.service.context import render_item, said_on
from engram.tokens import count_tokens

FACTS = [
    "I prefer dark roast coffee, no sugar",
    "Coffee after 3pm keeps me awake",
    "Our team uses pnpm for every JavaScript project",
    "The payments service is written in Go",
    "My dog is called Biscuit",
]


def seed(e: Engram) -> None:
    for text in FACTS:
        e.memories.add(NewMemory(content=text, importance=0.6), LOCAL)
    e.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content="We compared coffee grinders and picked a burr grinder",
            episode=EpisodeDetails(key_decisions=["buy a burr grinder"]),
        ),
        LOCAL,
    )
    e.memories.add(
        NewMemory(
            layer=Layer.PROCEDURE,
            content="How to brew pour-over coffee",
            procedure=ProcedureDetails(
                name="pour-over", trigger="making coffee", steps=["grind 15 g", "bloom 30 s"]
            ),
        ),
        LOCAL,
    )
    e.index_pending()


def test_assembles_relevant_memories_of_every_layer(semantic_engram: Engram) -> None:
    e = semantic_engram
    seed(e)
    ctx = e.context.assemble(LOCAL, "how do I like my coffee", max_tokens=1000)
    assert ctx.tokens == count_tokens(ctx.text) <= 1000
    facts = next(t for t in ctx.tiers if t.name == "facts")
    texts = " ".join(i.text for i in facts.items)
    assert "dark roast" in texts and "Biscuit" not in texts and "pnpm" not in texts
    assert "<memories>" in ctx.text and "<episodes>" in ctx.text and "<procedures>" in ctx.text
    assert (
        ctx.text.index("<memories>") < ctx.text.index("<episodes>") < ctx.text.index("<procedures>")
    )
    assert "pour-over (when: making coffee)" in ctx.text and "1. grind 15 g" in ctx.text
    assert set(ctx.timings_ms) >= {"search_ms", "pack_ms", "total_ms"}


def test_each_item_is_its_memory_rendered_scored_and_sourced(semantic_engram: Engram) -> None:
    """What packing works out once per memory (its line, tokens, date, sources) is that of
    the memory read back, and each item carries its own score's breakdown."""
    e = semantic_engram
    seed(e)
    ctx = e.context.assemble(LOCAL, "coffee grinder and pour-over", max_tokens=1000, preview=True)
    items = [i for t in ctx.tiers for i in t.items]
    assert {i.layer for i in items} == {Layer.FACT, Layer.EPISODE, Layer.PROCEDURE}
    for item in items:
        memory = e.store.get([item.memory_id])[0]
        assert item.text + "\n" == render_item(memory)
        assert item.tokens == count_tokens(render_item(memory))
        assert item.said_on == said_on(memory) and item.sources == source_ids(memory)
        assert item.author == memory.author and item.thread == memory.thread
        b = item.breakdown  # its own score's: the factors add up to it
        parts = (b.relevance, b.importance, b.confidence, b.recency, b.frequency)
        assert item.score == pytest.approx(sum(f.contribution for f in parts), abs=1e-12)
        assert b.found_by and b.stream_relevance is not None


def test_soul_comes_first_and_is_truncated_with_a_note(semantic_engram: Engram) -> None:
    e = semantic_engram
    seed(e)
    e.soul.set_block("identity", LOCAL, "You are a careful coding assistant. " * 3)
    e.soul.set_block("learned_patterns", LOCAL, "Likes small commits. " * 200)
    ctx = e.context.assemble(LOCAL, "coffee", max_tokens=400)
    assert ctx.text.startswith("<soul>")
    assert ctx.text.index("<soul>") < ctx.text.index("<memories>")
    soul = ctx.tiers[0]
    assert soul.name == "soul" and 0 < soul.used <= soul.budget == 100
    assert "learned_patterns" in soul.note
    assert ctx.tokens <= 400


def test_preview_does_not_count_access_but_assemble_does(semantic_engram: Engram) -> None:
    e = semantic_engram
    seed(e)
    e.context.assemble(LOCAL, "coffee", preview=True)
    e.accesses.flush()  # reads are counted a moment later (engram.service.accesses)
    page = e.memories.list_memories(LOCAL)
    assert all(m.access_count == 0 for m in page.items)
    ctx = e.context.assemble(LOCAL, "coffee")
    used = {i.memory_id for t in ctx.tiers for i in t.items}
    assert used
    e.accesses.flush()
    for m in e.memories.list_memories(LOCAL).items:
        assert m.access_count == (1 if m.id in used else 0)


def test_max_facts_and_empty_query_brief(semantic_engram: Engram) -> None:
    e = semantic_engram
    seed(e)
    ctx = e.context.assemble(LOCAL, "", max_facts=2, max_tokens=2000, preview=True)
    facts = next(t for t in ctx.tiers if t.name == "facts")
    assert len(facts.items) == 2  # no query: the most important and recent facts


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=25),
    budget=st.integers(min_value=64, max_value=1500),
)
def test_budget_is_never_exceeded(engram: Engram, lengths: list[int], budget: int) -> None:
    env = f"b{budget}-{len(lengths)}-{sum(lengths)}"
    if env not in {x.name for x in engram.environments.list(LOCAL)}:
        engram.environments.create(env, LOCAL)
        engram.memories.add_many(
            [NewMemory(content=("budget word " * n).strip()) for n in lengths], LOCAL, env
        )
    ctx = engram.context.assemble(LOCAL, "budget word", environment=env, max_tokens=budget)
    assert ctx.tokens == count_tokens(ctx.text) <= budget
    # a tier may grow past its guaranteed share, never the block past max_tokens
    assert sum(tier.used for tier in ctx.tiers) <= budget


def test_packed_memories_are_read_in_one_batch(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An assembly reads the memories its budget can hold in one store read (on PostgreSQL
    each read is a round trip), not a few at a time as packing reaches them."""
    engram.memories.add_many(
        [
            NewMemory(content=f"Deploy note {i}: the deploy runs from the main branch")
            for i in range(60)
        ],
        LOCAL,
    )
    store = engram.store
    reads: list[int] = []
    real = store.get

    def get(memory_ids: Sequence[str]) -> list[Memory]:
        reads.append(len(memory_ids))
        return real(memory_ids)

    monkeypatch.setattr(store, "get", get)
    ctx = engram.context.assemble(LOCAL, "deploy main branch", max_tokens=2000)
    facts = next(t for t in ctx.tiers if t.name == "facts")
    assert len(facts.items) >= 40
    assert len(reads) == 1, reads


def test_assembly_reads_its_environment_once(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment an assembly resolved is the one its Soul tier renders for: read once,
    not again by id for the Soul."""
    engram.environments.create("work", LOCAL)
    engram.memories.add(NewMemory(content="The deploy runs from the main branch"), LOCAL, "work")
    store = engram.store
    lookups: list[str] = []
    for name in ("get_environment", "find_environment"):
        real = getattr(store, name)

        def lookup(*args: str, _real: Callable[..., object] = real, _name: str = name) -> object:
            lookups.append(_name)
            return _real(*args)

        monkeypatch.setattr(store, name, lookup)
    ctx = engram.context.assemble(LOCAL, "deploy branch", environment="work", max_tokens=1000)
    assert any(t.name == "soul" for t in ctx.tiers)
    # by name at most once (none when this process has it kept from the add), never by id
    assert lookups in ([], ["find_environment"])


def test_an_episode_line_gives_its_decisions_once(engram: Engram) -> None:
    """A captured session's summary says "Decisions: ..." itself; the line appended them
    again from key_decisions."""
    said = "Let's use Redis instead of memcached."
    ep = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content=f"Session in claude: fix the cache. Decisions: {said} Outcome: done.",
            episode=EpisodeDetails(key_decisions=[said, "Keep the TTL at 60 s."]),
        ),
        LOCAL,
    )
    line = render_item(ep)
    assert line.count(said) == 1 and line.endswith("Decisions: Keep the TTL at 60 s.\n"), line
