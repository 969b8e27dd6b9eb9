"""Extraction and the lifecycle over HTTP against a live server, through the SDK and raw
requests: extract (dry run and for real), incremental and idempotent delivery, conversations,
feedback, undo and the review queue; who may do what; bad input as the canonical error body."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest

from engram import Layer, NewMemory, NotFound, PermissionDenied
from engram.accounts import Role, Scope
from engram.extraction import NewMessage
from engram.extraction.conversation import NewConversation
from engram.extraction.results import ConversationInput
from engram.lifecycle.report import WriteAction
from engram.lifecycle.reviews import ReviewStatus
from engram.models import Status
from engram.sdk import AsyncClient, Client
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

CHAT = [
    NewMessage(role="user", author="Caroline", content="I'm allergic to peanuts."),
    NewMessage(role="assistant", content="Noted, I will keep that in mind."),
    NewMessage(role="user", author="Caroline", content="I prefer pnpm over npm."),
]


def _error(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    error: dict[str, object] = body["error"]
    return error


def _turns(start: int, n: int) -> list[NewMessage]:
    out = []
    for i in range(start, start + n):
        out.append(NewMessage(role="user", content=f"Step {i}: I moved the job {i} to cron."))
        out.append(
            NewMessage(role="assistant", content=f"Done with step {i}.", external_id=f"a{i}")
        )
    return out


def test_extract_dry_run_then_store_then_redeliver(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("chats")
        dry = c.extraction.extract(CHAT, env.id, dry_run=True)
        assert dry.dry_run and dry.conversation_id is None and dry.outcomes == []
        facts = [p.content for p in dry.proposals if p.layer is Layer.FACT]
        assert "Caroline is allergic to peanuts." in facts
        assert c.facts.list(environment=env.id).total == 0  # a dry run stores nothing

        chat = ConversationInput(
            conversation=NewConversation(id="chat-42", source="claude", title="Setup"),
            messages=CHAT,
        )
        done = c.extraction.extract(chat, env.id)
        assert done.conversation_id == c.extraction.get_conversation("chat-42").id
        assert done.messages_added == 3
        assert {o.action for o in done.outcomes} == {"created"}
        assert done.stored_via == "lifecycle.remember"
        stored = {m.content for m in c.facts.list(environment=env.id).items}
        assert "Caroline is allergic to peanuts." in stored
        conv = c.extraction.get_conversation("chat-42")
        assert (conv.environment_id, conv.source, conv.title) == (env.id, "claude", "Setup")

        again = c.extraction.extract(chat, env.id)  # re-delivery: nothing new
        assert again.messages_added == 0 and again.outcomes == [] and again.proposals == []
        assert c.extraction.extract("chat-42").outcomes == []  # nothing left unread
        assert c.facts.list(environment=env.id).total == len(stored)


def test_incremental_messages_are_idempotent(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("growing")
        first = c.extraction.add_messages("sess-1", _turns(1, 4), env.id, title="cron")
        assert first.messages_added == 8 and first.proposals == []  # 4 assistant messages
        fifth = c.extraction.add_messages("sess-1", _turns(5, 1))
        assert fifth.messages_added == 2 and fifth.extractor == "rules"
        assert fifth.proposals and fifth.outcomes  # the 5th assistant message: extracted
        redelivered = c.extraction.add_messages("sess-1", _turns(1, 5))
        assert redelivered.messages_added == 0 and redelivered.outcomes == []
        assert c.extraction.get_conversation("sess-1").environment_id == env.id
        # the stored messages, in pages that follow one another without gaps or repeats
        first_page = c.extraction.messages("sess-1", limit=4)
        assert [m.position for m in first_page.items] == [1, 2, 3, 4]
        assert first_page.items[0].content == "Step 1: I moved the job 1 to cron."
        rest = c.extraction.messages("sess-1", after=first_page.next_after or 0, limit=100)
        assert [m.position for m in rest.items] == list(range(5, 11)) and rest.next_after is None
        assert rest.items[-1].external_id == "a5"
    with live.client(live.owner_token) as raw:
        bad = raw.get("/api/v1/conversations/sess-1/messages", params={"limit": 0})
        _error(bad, 422, "invalid_input")


def test_feedback_undo_and_review_queue(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("life")
        first = c.lifecycle.remember(
            NewMemory(content="User prefers dark mode", importance=0.9), env.id
        )
        assert first.action is WriteAction.CREATED
        helpful = c.lifecycle.feedback(first.memory.id, "helpful", "right on")
        assert helpful.confidence_after == pytest.approx(min(1.0, helpful.confidence_before + 0.1))
        wrong = c.lifecycle.feedback(first.memory.id, "wrong")
        assert wrong.confidence_after == pytest.approx(max(0.0, wrong.confidence_before - 0.5))
        assert c.facts.history(first.memory.id)[-1].reason == "feedback: wrong"

        # one slot, another value: too weak a match to retire an important memory
        queued = c.lifecycle.remember(NewMemory(content="User prefers light mode"), env.id)
        assert queued.action is WriteAction.QUEUED and queued.review_id
        [item] = c.lifecycle.reviews(env.id)
        assert (item.id, item.memory_id, item.other_id) == (
            queued.review_id,
            queued.memory.id,
            first.memory.id,
        )
        accepted = c.lifecycle.resolve_review(item.id, accept=True, note="he told me")
        assert accepted.status is ReviewStatus.ACCEPTED
        assert c.facts.get(first.memory.id).status is Status.SUPERSEDED
        assert c.lifecycle.reviews(env.id) == []
        assert [r.id for r in c.lifecycle.reviews(env.id, status=None)] == [item.id]

        undone = c.lifecycle.undo(first.memory.id)
        assert undone[0].id == first.memory.id
        assert c.facts.get(first.memory.id).status is Status.ACTIVE
        report = c.lifecycle.maintain(env.id, dry_run=True)
        assert report.dry_run and report.environment_ids == [env.id]
    with live.client(live.owner_token) as raw:
        again = raw.post(f"/api/v1/reviews/{item.id}/dismiss", json={})
        _error(again, 409, "conflict")


def test_async_extraction(live: Live) -> None:
    async def main() -> None:
        async with AsyncClient(live.url, live.owner_token) as c:
            out = await c.extraction.extract(CHAT, dry_run=True)
            assert out.proposals
            m = await c.lifecycle.remember(NewMemory(content="Async remembers"))
            assert (await c.lifecycle.feedback(m.memory.id, "outdated")).memory.version == 2

    asyncio.run(main())


@pytest.mark.slow
def test_strangers_get_404_and_read_keys_403(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("mine")
        c.extraction.extract(
            ConversationInput(conversation=NewConversation(id="c-1"), messages=CHAT), env.id
        )
        fact = c.lifecycle.remember(NewMemory(content="Owner's fact"), env.id).memory
        reader = c.accounts.create_key("ro", [Scope.READ])
    bob, bob_token = live.new_user("bob")
    msgs = [{"role": "user", "content": "I like tea."}]
    with live.client(bob_token) as b:
        for method, path, kw in (
            ("POST", "/api/v1/extract", {"json": {"messages": msgs, "environment": env.id}}),
            (
                "POST",
                "/api/v1/extract",
                {"json": {"messages": msgs, "environment": env.id, "dry_run": True}},
            ),
            ("GET", "/api/v1/conversations/c-1", {}),
            ("GET", "/api/v1/conversations/c-1/messages", {}),
            ("POST", "/api/v1/conversations/c-1/extract", {"json": {}}),
            ("POST", f"/api/v1/memories/{fact.id}/feedback", {"json": {"kind": "wrong"}}),
            ("POST", f"/api/v1/memories/{fact.id}/undo", {}),
            (
                "POST",
                "/api/v1/memories/remember",
                {"params": {"environment": env.id}, "json": {"content": "x"}},
            ),
            ("GET", "/api/v1/reviews", {"params": {"environment": env.id}}),
        ):
            r = b.request(method, path, **kw)
            _error(r, 404, "not_found")
    with Client(live.url, bob_token) as b2, pytest.raises(NotFound):
        b2.extraction.get_conversation("c-1")
    with Client(live.url, live.owner_token) as c:
        owners_c1 = c.extraction.get_conversation("c-1").id

    with Client(live.url, reader.token) as ro:
        assert ro.extraction.get_conversation("c-1").environment_id == env.id
        assert ro.extraction.extract(CHAT, env.id, dry_run=True).proposals
        with pytest.raises(PermissionDenied):
            ro.lifecycle.feedback(fact.id, "helpful")
        with pytest.raises(PermissionDenied):
            ro.lifecycle.remember(NewMemory(content="x"), env.id)
    with live.client(reader.token) as raw:
        r = raw.post(f"/api/v1/memories/{fact.id}/feedback", json={"kind": "wrong"})
        _error(r, 403, "permission_denied")

    with Client(live.url, live.owner_token) as c:
        c.environments.share(env.id, bob, Role.READER)
    with Client(live.url, bob_token) as b2:
        # caller ids are per user: a member reaches the owner's conversation by Engram's id
        with pytest.raises(NotFound):
            b2.extraction.get_conversation("c-1")
        assert b2.extraction.get_conversation(owners_c1).external_id == "c-1"
        with pytest.raises(PermissionDenied):
            b2.lifecycle.feedback(fact.id, "wrong")


def test_readers_cannot_store_conversations(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("guarded")
        c.extraction.add_messages("g-1", CHAT, env.id)
        reader = c.accounts.create_key("ro", [Scope.READ])
    with live.client(reader.token) as raw:
        more = {"messages": [{"role": "user", "content": "I like tea."}]}
        _error(raw.post("/api/v1/conversations/g-1/messages", json=more), 403, "permission_denied")
        _error(
            raw.post("/api/v1/extract", json={**more, "environment": env.id}),
            403,
            "permission_denied",
        )


def test_bad_input_is_422_with_the_canonical_body(live: Live) -> None:
    with live.client(live.owner_token) as c:
        err = _error(c.post("/api/v1/extract", json={"messages": []}), 422, "invalid_input")
        assert [e["loc"] for e in err["details"]["errors"]] == [["body", "messages"]]  # type: ignore[index]
        bad_role = {"messages": [{"role": "robot", "content": "hi"}]}
        _error(c.post("/api/v1/extract", json=bad_role), 422, "invalid_input")
        _error(
            c.post("/api/v1/extract", json={"messages": [{"role": "user", "content": ""}]}),
            422,
            "invalid_input",
        )
        _error(
            c.post("/api/v1/conversations/bad%20id!/messages", json=bad_role),
            422,
            "invalid_input",
        )
        _error(
            c.post(
                "/api/v1/conversations/ok-id/messages", json={"messages": [], "source": "Not OK"}
            ),
            422,
            "invalid_input",
        )
        _error(c.get("/api/v1/conversations/cnv_missing"), 404, "not_found")
        _error(
            c.post("/api/v1/memories/mem_x/feedback", json={"kind": "meh"}), 422, "invalid_input"
        )
        _error(c.post("/api/v1/memories/mem_x/feedback", json={"kind": "wrong"}), 404, "not_found")
        _error(c.get("/api/v1/reviews", params={"limit": 0}), 422, "invalid_input")
        _error(c.get("/api/v1/reviews", params={"status": "maybe"}), 422, "invalid_input")
        _error(c.post("/api/v1/reviews/rev_missing/accept", json={}), 404, "not_found")
        fact = c.post("/api/v1/memories/remember", json={"content": "plain"}).json()["memory"]
        undo = c.post(f"/api/v1/memories/{fact['id']}/undo")
        assert "no lifecycle action" in str(_error(undo, 422, "invalid_input")["message"])


def test_context_marks_the_message_of_a_superseded_fact(live: Live) -> None:
    """POST /extract, then /context over the SDK and raw JSON: the message whose fact a later
    one superseded is packed with its mark and its item's supersessions."""
    said = [
        ("I live in Porto now.", datetime(2023, 5, 8, 14, 30, tzinfo=UTC)),
        ("I moved to Lisbon last week.", datetime(2023, 9, 2, 10, 0, tzinfo=UTC)),
    ]
    chat = [
        NewMessage(role="user", author="Caroline", content=text, created_at=at) for text, at in said
    ]
    mark = "[superseded on 2023-09-02 by: Caroline moved to Lisbon last week"
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("moves")
        done = c.extraction.extract(chat, env.id)
        porto, lisbon = (o.memory_id for o in done.outcomes[:2])
        ctx = c.context("where does Caroline live?", env.id, preview=True)
        item = next(i for t in ctx.tiers for i in t.items if "Porto" in i.text)
        assert mark in item.text and mark in ctx.text
        assert [(s.fact, s.superseded_by, s.said_on) for s in item.superseded] == [
            (porto, lisbon, "2023-09-02")
        ]
    with live.client(live.owner_token) as raw:
        body = {"query": "where does Caroline live?", "environment": env.id}
        answer = raw.post("/api/v1/context/preview", json=body)
        assert answer.status_code == 200, answer.text
        items = [i for t in answer.json()["tiers"] for i in t["items"]]
        marked = [i["superseded"] for i in items if i["superseded"]]
        assert marked == [[{"fact": porto, "superseded_by": lisbon, "said_on": "2023-09-02"}]]
