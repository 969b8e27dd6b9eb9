"""Conversations keep their evidence: a delivered message is searchable and reaches the
context with its date; the budget is filled when candidates qualify; relevance is comparable
across queries, with a floor; accesses count only what was delivered."""

from __future__ import annotations

from datetime import UTC, datetime

from engram import LOCAL, Engram, Layer, NewMemory
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.dates import annotate
from engram.extraction.results import ConversationInput
from engram.retrieval.models import SearchMode
from engram.tokens import count_tokens

SAID = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)


def deliver(e: Engram, messages: list[tuple[str, str]]) -> str:
    data = ConversationInput(
        conversation=NewConversation(id="chat-1", source="import"),
        messages=[
            NewMessage(role=Speaker.USER, author=who, content=text, created_at=SAID)
            for who, text in messages
        ],
    )
    result = e.extraction.extract(data, LOCAL)
    assert result.conversation_id is not None  # Engram's own id; "chat-1" is the caller's
    return result.conversation_id


def test_a_fact_said_once_and_never_extracted_is_found_by_search_and_context(
    semantic_engram: Engram,
) -> None:
    e = semantic_engram
    conv = deliver(
        e,
        [
            ("Mel", "Hi! How was the weekend?"),
            ("Caroline", "Great, the pottery class made a bowl shaped like a pelican."),
            ("Mel", "Ha, nice."),
        ],
    )
    stored = e.extraction.conversations.messages(conv)
    extracted = [
        m
        for m in e.memories.list_memories(LOCAL, limit=100).items
        if m.layer is Layer.FACT and "pelican" in m.content
    ]
    assert extracted == []  # no rule kept it as a fact
    e.index_pending()
    found = e.search.search("pelican bowl", LOCAL, count_access=False).items
    assert found and "pelican" in found[0].memory.content
    top = found[0]
    assert top.memory.author == "Caroline" and top.memory.thread == conv
    assert top.memory.created_at == SAID and top.sources == [stored[1].id]
    ctx = e.context.assemble(LOCAL, "what did Caroline make in pottery class?", preview=True)
    assert "(2023-05-08) Caroline: Great, the pottery class made a bowl" in ctx.text
    assert "<conversation>" in ctx.text
    item = next(i for t in ctx.tiers for i in t.items if "pelican" in i.text)
    assert item.said_on == "2023-05-08" and item.sources == [stored[1].id]
    # re-delivery stores nothing twice
    before = e.memories.list_memories(LOCAL, limit=100).total
    deliver(e, [("Mel", "Hi! How was the weekend?")])
    assert e.memories.list_memories(LOCAL, limit=100).total == before
    assert e.extraction.conversations.count_messages(conv) == 3


def test_extracted_fact_is_dated_by_its_message_and_resolves_relative_dates(
    engram: Engram,
) -> None:
    deliver(engram, [("Caroline", "I moved to Lyon last month.")])
    facts = [
        m
        for m in engram.memories.list_memories(LOCAL, limit=50).items
        if m.category != "message" and m.layer.value == "fact"
    ]
    assert facts, "the rule extractor keeps a move"
    assert all(f.created_at == SAID for f in facts)
    assert any("last month (April 2023)" in f.content for f in facts)
    ctx = engram.context.assemble(LOCAL, "where did Caroline move", preview=True)
    assert "(2023-05-08)" in ctx.text
    # the fact and the message it came from do not both take a slot
    packed = [i for t in ctx.tiers for i in t.items]
    assert sum("Lyon" in i.text for i in packed) == 1
    assert sum(t.duplicates for t in ctx.tiers) >= 1


def test_an_episode_dates_each_sentence_by_its_own_message(engram: Engram) -> None:
    """A session over two days: 'yesterday', said on 3 November, is 2 November in the
    episode too. Before, the episode resolved it against its last message (4 November):
    'Yesterday (3 November 2026)', a day off, while the fact from it said 2 November."""
    day3, day4 = datetime(2026, 11, 3, 9, tzinfo=UTC), datetime(2026, 11, 4, 9, tzinfo=UTC)
    turns = [
        (Speaker.USER, "Yesterday I ran the Porto marathon in under four hours.", day3),
        (Speaker.ASSISTANT, "Congratulations on finishing the Porto marathon so fast!", day3),
        (Speaker.USER, "My legs still hurt after the marathon in Porto, honestly.", day4),
        (Speaker.ASSISTANT, "Rest well and stretch your legs after the marathon.", day4),
    ]
    messages = [
        NewMessage(role=r, content=t, created_at=at, author="carol" if r is Speaker.USER else None)
        for r, t, at in turns
    ]
    engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="run"), messages=messages), LOCAL
    )
    episodes = [
        m
        for m in engram.memories.list_memories(LOCAL, limit=50).items
        if m.layer is Layer.EPISODE and m.category == "episode"
    ]
    assert episodes and all("Yesterday (2 November 2026)" in e.content for e in episodes)
    assert not any("3 November" in e.content for e in episodes)


def test_a_dry_run_and_the_result_show_the_text_that_is_stored(engram: Engram) -> None:
    """A proposal carries the absolute date its stored memory gets, in a dry run and in the
    real run's result (walkthrough 32, finding 8)."""
    said = [
        NewMessage(
            role=Speaker.USER,
            author="Dina",
            content="I moved to Porto last month.",
            created_at=SAID,
        )
    ]
    dry = engram.extraction.extract(ConversationInput(messages=said), LOCAL, dry_run=True)
    data = ConversationInput(conversation=NewConversation(id="dina-1"), messages=said)
    real = engram.extraction.extract(data, LOCAL)
    shown = [p.content for p in dry.proposals if p.layer is Layer.FACT]
    assert shown == ["Dina moved to Porto last month (April 2023)."]
    assert [p.content for p in real.proposals if p.layer is Layer.FACT] == shown
    stored = engram.memories.get(real.outcomes[0].memory_id, LOCAL)
    assert real.proposals[0].content == stored.content and stored.created_at == SAID


def test_relative_dates() -> None:
    said = SAID.date()  # a Monday
    assert annotate("yesterday", said) == "yesterday (7 May 2023)"
    assert annotate("last Friday", said) == "last Friday (5 May 2023)"
    assert annotate("3 years ago", said) == "3 years ago (2020)"
    assert annotate("next week", said) == "next week (week of 15 May 2023)"
    assert annotate("already dated last month (April 2023)", said).count("April") == 1


def test_budget_is_filled_when_candidates_qualify_and_never_exceeded(engram: Engram) -> None:
    engram.memories.add_many(
        [
            NewMemory(content=f"Build note {i}: the build cache lives in volume {i}")
            for i in range(60)
        ],
        LOCAL,
    )
    for budget in (200, 500, 1000):
        ctx = engram.context.assemble(LOCAL, "build cache volume", max_tokens=budget, preview=True)
        assert ctx.tokens == count_tokens(ctx.text) <= budget
        items = [i for t in ctx.tiers for i in t.items]
        # more than the old cap of 15 facts, and no room left for another line
        assert len(items) > (15 if budget == 1000 else 0)
        assert budget - ctx.tokens < max(i.tokens for i in items) + 5
        assert all(i.said_on for i in items) and all(i.text.startswith("- (") for i in items)


def test_a_lone_keyword_hit_does_not_outrank_a_strong_match(semantic_engram: Engram) -> None:
    e = semantic_engram
    lone = e.memories.add(
        NewMemory(content="The quarterly offsite agenda mentions a manager sync"), LOCAL
    )
    strong = e.memories.add(
        NewMemory(content="Our package manager for JavaScript projects is pnpm"), LOCAL
    )
    e.index_pending()
    found = e.search.search("which package manager for javascript", LOCAL, count_access=False)
    ids = [r.memory.id for r in found.items]
    assert ids[0] == strong.id
    # keyword-only: the lone hit shares one word of three, so its relevance is a third at most
    kw = e.search.search(
        "which package manager for javascript", LOCAL, mode=SearchMode.KEYWORD, count_access=False
    )
    rel = {r.memory.id: r.breakdown.relevance.value for r in kw.items}
    assert rel[strong.id] > 0.9 and rel.get(lone.id, 0.0) <= 0.34


def test_nothing_below_the_floor_is_returned(engram: Engram) -> None:
    engram.memories.add(NewMemory(content="Deploys go via the staging cluster on Fridays"), LOCAL)
    engram.memories.add(NewMemory(content="Lunch is at noon"), LOCAL)
    floor = engram.search.scoring.min_relevance
    found = engram.search.search("staging deploys fridays", LOCAL, count_access=False)
    assert [r.memory.content for r in found.items] == [
        "Deploys go via the staging cluster on Fridays"
    ]
    assert all((r.breakdown.stream_relevance or 0) >= floor for r in found.items)
    # a question whose words appear nowhere gets nothing, not the ten least bad memories
    assert engram.search.search("quantum chromodynamics", LOCAL, count_access=False).items == []


def test_access_counts_only_what_was_delivered(semantic_engram: Engram) -> None:
    engram = semantic_engram
    engram.memories.add_many(
        [NewMemory(content=f"Filler memory number {i} about gardening") for i in range(30)]
        + [NewMemory(content="The staging cluster deploys on Fridays")],
        LOCAL,
    )
    engram.index_pending()
    found = engram.search.search("staging cluster fridays", LOCAL, limit=10)
    returned = {r.memory.id for r in found.items}
    ctx = engram.context.assemble(LOCAL, "staging cluster", max_tokens=64)
    packed = {i.memory_id for t in ctx.tiers for i in t.items}
    engram.accesses.flush()  # reads are counted a moment later (engram.service.accesses)
    for m in engram.memories.list_memories(LOCAL, limit=100).items:
        expected = (m.id in returned) + (m.id in packed)
        assert m.access_count == expected, m.content
    assert returned and all(
        "staging" in m.content for m in engram.memories.list_memories(LOCAL).items if m.access_count
    )
