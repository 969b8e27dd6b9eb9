"""Which delivered messages a conversation stores (Store.conversations.append_messages, both
backends): a re-delivery of what it holds stores nothing, whatever the app sends with it, and
what is new is stored, a message said again too. The cases the review of stop 35 found the
first rule storing twice (a system prompt with each turn, a trimmed window, a retry after
another delivery landed), beside the ones that rule was for."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from engram.extraction.conversation import Conversation, NewMessage, redelivered
from engram.store import Store

_ids = itertools.count(1)


def _conv(store: Store) -> str:
    from tests.test_store_contract import _env

    _env(store)
    store.conversations.create_conversation(
        Conversation(id="c1", environment_id="env_a", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    )
    return "c1"


def _send(store: Store, *msgs: tuple[str, str]) -> list[str]:
    news = [NewMessage(role=r, content=c) for r, c in msgs]
    out = store.conversations.append_messages("c1", news, [f"msg_{next(_ids)}" for _ in news])
    return [m.content for m in out]


def _all(store: Store) -> list[str]:
    return [f"{m.role.value}:{m.content}" for m in store.conversations.messages("c1")]


SYS = ("system", "You are a helpful assistant.")


def test_system_prompt_with_the_new_turn(store: Store) -> None:
    """A chat client that sends its system prompt with each new user message."""
    _conv(store)
    _send(store, SYS, ("user", "I live in Porto."))
    _send(store, SYS, ("user", "I moved to Lisbon."))
    _send(store, SYS, ("user", "I have a cat."))
    assert _all(store).count("system:You are a helpful assistant.") == 1


def test_sliding_window_after_the_system_prompt(store: Store) -> None:
    """OpenAI-style messages array trimmed to the system prompt and the last 2 turns."""
    _conv(store)
    history = [SYS]
    for i in range(4):
        history += [("user", f"question {i}"), ("assistant", f"answer {i}")]
        window = [SYS, *history[1:][-3:]]  # system + last 3 messages
        _send(store, *window)
    assert len(_all(store)) == len(history), _all(store)


def test_retry_after_another_delivery_landed(store: Store) -> None:
    """A delivery whose response was lost is retried after the assistant's reply was stored."""
    _conv(store)
    _send(store, ("user", "hello"))
    _send(store, ("user", "my name is Ann"), ("user", "I like tea"))  # times out, but stored
    _send(store, ("assistant", "Nice to meet you, Ann."))  # another process delivers the reply
    _send(store, ("user", "my name is Ann"), ("user", "I like tea"))  # the client retries
    assert len(_all(store)) == 4


def test_a_window_then_a_repeated_ok_is_new(store: Store) -> None:
    """The last turns sent again with a new "ok": the window is the re-delivery, the "ok" new,
    however many earlier ones the conversation holds."""
    _conv(store)
    for i in range(3):
        _send(store, ("user", f"step {i}"), ("assistant", "ok"))
    assert _send(store, ("user", "step 2"), ("assistant", "ok"), ("assistant", "ok")) == ["ok"]
    assert _send(store, ("user", "step 3"), ("assistant", "ok")) == ["step 3", "ok"]
    assert _all(store).count("assistant:ok") == 5


def test_a_long_conversation_sent_again_is_one_re_delivery() -> None:
    """5,000 messages of seven texts sent again with a new one, against the 5,000 stored."""
    stored = [f"h:{i % 7}" for i in range(5000)]
    assert redelivered([*stored, "h:new"], stored) == 5000
    assert redelivered([*stored[-40:], "h:1"], stored) == 40  # the window, then a new "h:1"
