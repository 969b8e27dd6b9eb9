"""A delivered message whose fact a newer one superseded stays in the context as what was said,
but its line says so and names the current fact (its item lists each supersession)."""

from __future__ import annotations

from datetime import UTC, datetime

from engram import LOCAL, Engram
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.results import ConversationInput, ExtractionResult
from engram.retrieval.models import AssembledContext, ContextItem, Supersession
from engram.service import superseded
from engram.tokens import count_tokens

PORTO = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)
LISBON = datetime(2023, 9, 2, 10, 0, tzinfo=UTC)
MADRID = datetime(2024, 1, 20, 9, 0, tzinfo=UTC)
QUERY = "where does Caroline live?"


def deliver(e: Engram, chat: str, messages: list[tuple[str, str, datetime]]) -> ExtractionResult:
    """``messages`` through the call behind POST /extract, as (author, text, said at)."""
    data = ConversationInput(
        conversation=NewConversation(id=chat, source="import"),
        messages=[
            NewMessage(role=Speaker.USER, author=who, content=text, created_at=at)
            for who, text, at in messages
        ],
    )
    return e.extraction.extract(data, LOCAL)


def moved(e: Engram) -> tuple[str, str]:
    """Caroline lives in Porto, then (months later, same chat) moved to Lisbon: the ids of
    the fact superseded and of the one that superseded it."""
    result = deliver(
        e,
        "chat-1",
        [
            ("Caroline", "I live in Porto now.", PORTO),
            ("Mel", "Nice, how is the weather there?", PORTO.replace(minute=31)),
            ("Caroline", "I moved to Lisbon last week.", LISBON),
        ],
    )
    old, new = result.outcomes[0], result.outcomes[1]
    assert (old.action, new.action, new.related_id) == ("created", "superseded", old.memory_id)
    return old.memory_id, new.memory_id


def items(ctx: AssembledContext, tier: str) -> list[ContextItem]:
    return next(t.items for t in ctx.tiers if t.name == tier)


def test_the_message_of_a_superseded_fact_is_marked_with_the_current_one(
    engram: Engram,
) -> None:
    porto, lisbon = moved(engram)
    ctx = engram.context.assemble(LOCAL, QUERY, preview=True)
    facts, said = items(ctx, "facts"), items(ctx, "messages")
    assert [i.memory_id for i in facts] == [lisbon]
    old = next(i for i in said if "Porto" in i.text)  # still evidence of what was said
    assert old.text == (
        "- (2023-05-08) Caroline: I live in Porto now. [superseded on 2023-09-02 by: "
        "Caroline moved to Lisbon last week (week of 21 August 2023).]"
    )
    assert old.superseded == [Supersession(fact=porto, superseded_by=lisbon, said_on="2023-09-02")]
    assert all(i.superseded == [] for i in [*facts, *said] if i is not old)
    assert old.text + "\n" in ctx.text
    assert ctx.text.index("Lisbon last week") < ctx.text.index("<conversation>")
    assert ctx.tokens == count_tokens(ctx.text) and old.tokens == count_tokens(old.text + "\n")
    # and it is still found as it was said
    found = engram.search.search("Porto", LOCAL, count_access=False).items
    assert "Caroline: I live in Porto now." in [f.memory.content for f in found]


def test_a_chain_of_replacements_names_the_current_fact(engram: Engram) -> None:
    """Porto, then Lisbon, then (another chat) Madrid: both earlier messages name Madrid; once
    Madrid is deleted no active fact replaces them, and neither is marked."""
    moved(engram)
    result = deliver(engram, "chat-2", [("Caroline", "I moved to Madrid in January.", MADRID)])
    madrid = result.outcomes[0].memory_id
    ctx = engram.context.assemble(LOCAL, QUERY, preview=True)
    marked = {i.text.split(": ", 1)[1].split(" [")[0]: i for i in items(ctx, "messages")}
    for said in ("I live in Porto now.", "I moved to Lisbon last week."):
        assert marked[said].text.endswith(
            "[superseded on 2024-01-20 by: Caroline moved to Madrid in January.]"
        )
        assert [s.superseded_by for s in marked[said].superseded] == [madrid]
    engram.memories.delete(madrid, LOCAL)
    ctx = engram.context.assemble(LOCAL, QUERY, preview=True)
    assert "superseded" not in ctx.text
    assert all(i.superseded == [] for t in ctx.tiers for i in t.items)


def test_a_restored_fact_unmarks_its_message(engram: Engram) -> None:
    porto, lisbon = moved(engram)
    engram.memories.delete(lisbon, LOCAL)
    engram.memories.restore(porto, LOCAL)
    ctx = engram.context.assemble(LOCAL, QUERY, preview=True)
    assert "superseded" not in ctx.text


def test_a_long_marked_line_keeps_its_mark_when_clipped(engram: Engram) -> None:
    """MCP's compact hits clip each line: the mark survives, the message is cut before it."""
    chatter = " ".join(["We talked about the harbour and the bridges for a while."] * 6)
    deliver(
        engram,
        "chat-1",
        [
            ("Caroline", f"I live in Porto now. {chatter}", PORTO),
            ("Caroline", "I moved to Lisbon last week.", LISBON),
        ],
    )
    ctx = engram.context.assemble(LOCAL, QUERY, preview=True)
    old = next(i for i in items(ctx, "messages") if "Porto" in i.text)
    line = superseded.compact_line(old, 200)
    assert len(old.text) > 200 and len(line) == 200
    assert line.startswith("(2023-05-08) Caroline: I live in Porto now.")
    assert line.endswith(
        "[superseded on 2023-09-02 by: Caroline moved to Lisbon last week "
        "(week of 21 August 2023).]"
    )
    plain = next(i for i in items(ctx, "facts"))
    assert superseded.compact_line(plain, 20) == plain.text.removeprefix("- ")[:20]
