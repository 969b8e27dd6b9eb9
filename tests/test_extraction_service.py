"""ExtractionService over a real SQLite store: storing, dry runs, idempotent re-delivery and
the incremental cadence."""

from __future__ import annotations

import pytest

from engram import LOCAL, Engram, Layer, Memory, NewMemory
from engram.errors import InvalidInput, NotFound
from engram.extraction import NewConversation, NewMessage
from engram.extraction.results import ConversationInput
from engram.extraction.rules import Extractor
from engram.models import MemoryFilter
from engram.service.extraction import ExtractionConfig, ExtractionService


def msg(role: str, content: str, ext: str | None = None) -> NewMessage:
    return NewMessage.model_validate({"role": role, "content": content, "external_id": ext})


CHAT = [
    msg("user", "I prefer Postgres over MySQL for new services.", "1"),
    msg("assistant", "Good choice; Postgres has great JSON support.", "2"),
    msg("user", "I'm allergic to shellfish, remember that for team dinners.", "3"),
    msg("assistant", "Noted.", "4"),
]


def all_memories(engram: Engram) -> list[Memory]:
    return engram.memories.list_memories(LOCAL, MemoryFilter(), limit=1000).items


def test_dry_run_proposes_without_storing(engram: Engram) -> None:
    result = engram.extraction.extract(CHAT, LOCAL, dry_run=True)
    contents = [p.content for p in result.proposals]
    assert "The user prefers Postgres over MySQL for new services." in contents
    assert result.dry_run and result.outcomes == [] and result.stored_via is None
    assert all_memories(engram) == []


def test_extract_stores_proposals_and_the_conversation(engram: Engram) -> None:
    data = ConversationInput(
        conversation=NewConversation(id="chat-1", source="chatgpt", title="DB choice"),
        messages=CHAT,
    )
    result = engram.extraction.extract(data, LOCAL)
    conv = engram.extraction.get_conversation("chat-1", LOCAL)  # the caller's own id
    assert conv.external_id == "chat-1" and conv.owner == LOCAL.user_id
    assert result.conversation_id == conv.id and result.messages_added == 4
    assert result.stored_via == "lifecycle.remember"
    stored = {m.content: m for m in all_memories(engram)}
    fact = stored["The user is allergic to shellfish, remember that for team dinners."]
    assert fact.source == "extracted" and fact.category == "constraint"
    assert fact.metadata["conversation_id"] == conv.id
    assert any(m.layer is Layer.EPISODE for m in stored.values())
    assert (conv.source, conv.title) == ("chatgpt", "DB choice")
    assert [m.position for m in engram.extraction.conversations.messages(conv.id)] == [1, 2, 3, 4]


def test_redelivery_is_idempotent(engram: Engram) -> None:
    data = ConversationInput(conversation=NewConversation(id="chat-2"), messages=CHAT)
    first = engram.extraction.extract(data, LOCAL)
    count = len(all_memories(engram))
    again = engram.extraction.extract(data, LOCAL)
    assert first.outcomes and again.messages_added == 0 and again.proposals == []
    assert len(all_memories(engram)) == count
    # without external ids, identical messages are recognised by their content hash
    plain = [NewMessage(role=m.role, content=m.content) for m in CHAT]
    engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="c3"), messages=plain), LOCAL
    )
    n = len(all_memories(engram))
    redo = engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="c3"), messages=plain), LOCAL
    )
    assert redo.messages_added == 0 and len(all_memories(engram)) == n


def test_new_messages_extend_a_stored_conversation(engram: Engram) -> None:
    engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="c4"), messages=CHAT), LOCAL
    )
    more = [msg("user", "My brother works as a pilot for a small airline.", "5")]
    result = engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="c4"), messages=CHAT + more), LOCAL
    )
    facts = [p.content for p in result.proposals if p.layer is Layer.FACT]
    # only the new message yields facts; the earlier ones were already extracted
    assert facts == ["The user's brother works as a pilot for a small airline."]


def test_incremental_cadence_every_n_assistant_messages(engram: Engram) -> None:
    service = ExtractionService(
        engram.lifecycle,
        engram.environments,
        engram.memories,
        engram.store.conversations,
        engram.clock,
        config=ExtractionConfig(every=2, window=4),
    )
    hobbies = ["climbing", "chess", "sailing", "pottery", "karaoke", "baking"]
    results = []
    for i, hobby in enumerate(hobbies):
        batch = [
            msg("user", f"I really love {hobby} on weekends.", f"u{i}"),
            msg("assistant", f"{hobby.title()} sounds fun.", f"a{i}"),
        ]
        results.append(service.add_messages("live", batch, LOCAL))
        # re-delivering the same batch changes nothing
        assert service.add_messages("live", batch, LOCAL).messages_added == 0
    ran = [i for i, r in enumerate(results) if r.outcomes]
    assert ran == [1, 3, 5]  # after every second assistant message
    facts = [p.content for r in results for p in r.proposals if p.layer is Layer.FACT]
    assert sorted(facts) == sorted(f"The user really loves {h} on weekends." for h in hobbies)
    episodes = [p for r in results for p in r.proposals if p.layer is Layer.EPISODE]
    assert len(episodes) == 3
    assert all(o.memory_id for r in results for o in r.outcomes)
    live = service.get_conversation("live", LOCAL).id
    assert service.conversations.extraction_state(live).assistant_messages == 6


def test_defaults_are_five_and_twenty(engram: Engram) -> None:
    assert (engram.extraction.config.every, engram.extraction.config.window) == (5, 20)
    with pytest.raises(InvalidInput):
        ExtractionConfig(every=0)


def test_conversations_are_private_to_their_environment_owner(engram: Engram) -> None:
    from engram.actors import Actor

    engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="mine"), messages=CHAT), LOCAL
    )
    with pytest.raises(NotFound):
        engram.extraction.get_conversation("mine", Actor("mallory"))
    with pytest.raises(NotFound):
        engram.extraction.extract("missing", LOCAL)


def test_proposals_go_through_the_lifecycle(engram: Engram) -> None:
    """A proposal that repeats a stored fact is merged into it by the lifecycle's dedup."""
    known = engram.memories.add(
        NewMemory(content="The user prefers Postgres over MySQL for new services."), LOCAL
    )
    result = engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="lc"), messages=CHAT), LOCAL
    )
    merged = [o for o in result.outcomes if o.action == "merged"]
    assert [(o.memory_id, o.related_id) for o in merged] == [(known.id, known.id)]
    assert result.memory_ids("created")  # the other proposals are new


def test_environment_delete_removes_its_conversations(engram: Engram) -> None:
    engram.environments.create("scratch", LOCAL)
    engram.extraction.extract(
        ConversationInput(conversation=NewConversation(id="tmp"), messages=CHAT[:1]),
        LOCAL,
        "scratch",
    )
    engram.environments.delete("scratch", LOCAL, purge=True)
    assert engram.extraction.conversations.get_conversation("tmp") is None


def test_a_conversation_extracted_again_keeps_one_current_episode(engram: Engram) -> None:
    """Walkthrough 34: per-turn delivery extracted at the fifth assistant message, then an
    extract at the chat's end: two near-identical summaries of one conversation, both in
    search and context. A run that reads the conversation from its first message replaces the
    earlier summary (superseded by it, restorable)."""
    from engram.models import Status

    topics = ["Porto", "Neovim", "Lisbon", "school", "tea", "Azores"]
    for topic in topics:
        engram.extraction.add_messages(
            "chat-1",
            [
                msg("user", f"I talked about {topic} and the plans around {topic} today."),
                msg("assistant", f"Thanks for sharing the news about {topic} with me."),
            ],
            LOCAL,
        )
    engram.extraction.extract("chat-1", LOCAL)
    flt = MemoryFilter(layers=[Layer.EPISODE], categories=["episode"], statuses=list(Status))
    episodes = engram.store.list_memories(flt, limit=50)
    active = [m for m in episodes if m.status is Status.ACTIVE]
    assert len(episodes) == 2 and len(active) == 1
    (older,) = [m for m in episodes if m.status is Status.SUPERSEDED]
    assert older.superseded_by == active[0].id and active[0].supersedes == older.id
    restored = engram.lifecycle.undo(older.id, LOCAL)
    assert restored[0].status is Status.ACTIVE


TOPICS = [
    "Porto",
    "Neovim",
    "Lisbon",
    "school",
    "tea",
    "Azores",
    "bread",
    "cycling",
    "Rust",
    "opera",
    "garden",
    "chess",
    "Kyoto",
    "violin",
    "sailing",
    "pottery",
    "jazz",
    "Madrid",
    "yoga",
    "camping",
    "salsa",
    "ramen",
    "Berlin",
    "kayak",
    "poetry",
    "cider",
    "Oslo",
    "tennis",
    "sushi",
    "drums",
]


def deliver_turns(
    engram: Engram, conversation: str, topics: list[str], extractor: Extractor | None = None
) -> None:
    """A chat delivered a turn (a user message and the reply) at a time, one turn a topic."""
    for topic in topics:
        engram.extraction.add_messages(
            conversation,
            [
                msg("user", f"I talked about {topic} and the plans around {topic} today."),
                msg("assistant", f"Thanks for sharing the news about {topic} with me."),
            ],
            LOCAL,
            extractor=extractor,
        )


def test_a_long_chat_delivered_turn_by_turn_keeps_one_summary_per_part(engram: Engram) -> None:
    """A chat longer than the extraction window, delivered a turn at a time: each run read the
    last 20 messages and stored their summary, so every message was summarised by two active
    episodes (1-20, 11-30, 21-40, ...). Now a conversation's summaries cover parts one after
    the other, each of at most the window: a run that goes on with the latest part replaces
    its summary (restorable), and the parts never overlap."""
    from engram.models import Status

    deliver_turns(engram, "long-1", TOPICS)
    flt = MemoryFilter(layers=[Layer.EPISODE], categories=["episode"], statuses=list(Status))
    episodes = engram.store.list_memories(flt, limit=50)
    active = sorted(
        (m for m in episodes if m.status is Status.ACTIVE),
        key=lambda m: m.metadata["from_position"],
    )
    spans = [(m.metadata["from_position"], m.metadata["to_position"]) for m in active]
    assert spans == [(1, 20), (21, 40), (41, 60)]
    assert "garden" in active[1].content and "Porto" not in active[1].content
    assert "salsa" in active[2].content and "pottery" not in active[2].content
    replaced = [m for m in episodes if m.status is Status.SUPERSEDED]
    assert {m.superseded_by for m in replaced} == {m.id for m in active}
    assert engram.lifecycle.undo(replaced[-1].id, LOCAL)[0].status is Status.ACTIVE


def test_the_llm_is_told_which_part_its_episode_summarises() -> None:
    from datetime import UTC, datetime

    from engram.extraction.conversation import Conversation, Message, Speaker, Transcript
    from engram.extraction.llm import render

    conv = Conversation(id="c1", environment_id="env", created_at=datetime.now(UTC))
    messages = [
        Message(id=f"m{i}", conversation_id="c1", position=i, role=Speaker.USER, content=f"x{i}")
        for i in range(11, 16)
    ]
    scoped = render(Transcript(conversation=conv, messages=messages, summary_from=14))
    assert "summarises only the messages from [m14] on" in scoped
    assert "summarises only" not in render(Transcript(conversation=conv, messages=messages))


def test_a_message_said_again_is_kept_and_a_redelivery_is_not(engram: Engram) -> None:
    """Messages without an id or a time were keyed by their text alone, so a second "ok" or
    "Noted." in a conversation was dropped as a re-delivery of the first (and everything
    after it moved up a position). A delivery is now compared with the conversation's end: the
    run that repeats its last stored messages is a re-delivery (the whole conversation sent
    again, its last turns with a new one, a retry), and what follows is new."""
    conversations = engram.extraction.conversations

    def said(conv: str) -> list[str]:
        cid = engram.extraction.get_conversation(conv, LOCAL).id
        return [f"{m.position}:{m.content}" for m in conversations.messages(cid)]

    a, ok, b = msg("user", "Deploy the API."), msg("assistant", "Ok."), msg("user", "And docs.")
    engram.extraction.add_messages("turns", [a, ok], LOCAL)
    engram.extraction.add_messages("turns", [b, ok], LOCAL)  # the next turn
    assert said("turns") == ["1:Deploy the API.", "2:Ok.", "3:And docs.", "4:Ok."]
    engram.extraction.add_messages("turns", [b, ok], LOCAL)  # that delivery retried
    engram.extraction.add_messages("turns", [a, ok, b, ok], LOCAL)  # the whole chat again
    assert len(said("turns")) == 4
    engram.extraction.add_messages("turns", [a, ok, b, ok, msg("user", "Thanks.")], LOCAL)
    assert said("turns")[4:] == ["5:Thanks."]

    engram.extraction.extract(ConversationInput(messages=[a, ok, ok, b, ok]), LOCAL)
    stored = engram.store.list_memories(MemoryFilter(categories=["message"]), limit=100)
    assert sum(m.content == "assistant: Ok." for m in stored) == 3 + 2  # each one searchable

    # a message with a time or an id is the same message wherever it is delivered again
    from datetime import UTC, datetime

    timed = NewMessage.model_validate(
        {"role": "user", "content": "Ship it.", "created_at": datetime(2026, 5, 1, tzinfo=UTC)}
    )
    engram.extraction.add_messages("timed", [timed, ok, msg("user", "x", "id-1")], LOCAL)
    engram.extraction.add_messages("timed", [timed, msg("user", "x", "id-1")], LOCAL)
    assert said("timed") == ["1:Ship it.", "2:Ok.", "3:x"]
