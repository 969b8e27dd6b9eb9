"""A caller's conversation id is scoped to their user: another user's ids neither block nor
reveal anything; existing conversations migrate (issue 13, finding 4)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from engram import LOCAL, Engram, NotFound
from engram.actors import Actor
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.results import ConversationInput
from engram.models import MemoryFilter, NewMemory
from engram.retrieval.models import SearchMode
from engram.store.postgres import PostgresStore
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.migrations import MIGRATIONS, migrate
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture

HELLO = [NewMessage(role=Speaker.USER, content="I prefer tea over coffee.")]


def test_an_id_used_in_another_environment_adds_nothing_there(engram: Engram) -> None:
    """An app with an environment per tenant reuses 'session-1' in each (walkthrough 34):
    before, the second tenant's message went into the first tenant's conversation, in the
    first tenant's context and not the second's. Now it is a Conflict naming the way out,
    nothing is stored, and the conversation's own environment (or none named) still works."""
    from engram.errors import Conflict

    for name in ("tenant-x", "tenant-y"):
        engram.environments.create(name, LOCAL)
    x = [NewMessage(role=Speaker.USER, content="I'm Xavier, I live in Oslo.")]
    y = [NewMessage(role=Speaker.USER, content="I'm Yara and I am pregnant.")]
    engram.extraction.add_messages("session-1", x, LOCAL, "tenant-x")
    with pytest.raises(Conflict, match="is in environment 'tenant-x', not 'tenant-y'"):
        engram.extraction.add_messages("session-1", y, LOCAL, "tenant-y")
    with pytest.raises(Conflict, match="'tenant-y:session-1'"):
        engram.extraction.extract(
            ConversationInput(conversation=NewConversation(id="session-1"), messages=y),
            LOCAL,
            "tenant-y",
        )
    assert len(engram.extraction.messages("session-1", LOCAL).items) == 1
    found = engram.store.list_memories(MemoryFilter(), limit=50)
    assert not any("Yara" in m.content for m in found)
    engram.extraction.add_messages("tenant-y:session-1", y, LOCAL, "tenant-y")
    more = [NewMessage(role=Speaker.USER, content="I moved to Bergen.")]
    assert engram.extraction.add_messages("session-1", more, LOCAL, "tenant-x").messages_added
    assert engram.extraction.add_messages("session-1", x + more, LOCAL).messages_added == 0


def test_caller_ids_are_scoped_per_user(engram: Engram) -> None:
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    mine = engram.extraction.add_messages("chat-7", HELLO, LOCAL)
    assert mine.messages_added == 1
    # bob's "chat-7" is his own: created, not refused, not mixed with the owner's
    theirs = engram.extraction.add_messages("chat-7", HELLO, bob)
    assert theirs.messages_added == 1 and theirs.conversation_id != mine.conversation_id
    # an id nobody holds and an id someone else holds answer alike
    fresh = engram.extraction.add_messages("never-used", HELLO, bob)
    assert fresh.messages_added == 1
    own = engram.extraction.get_conversation("chat-7", LOCAL)
    other = engram.extraction.get_conversation("chat-7", bob)
    assert (own.id, own.owner, own.external_id) == (mine.conversation_id, "local", "chat-7")
    assert (other.id, other.owner, other.external_id) == (
        theirs.conversation_id,
        bob.user_id,
        "chat-7",
    )
    assert own.environment_id != other.environment_id
    with pytest.raises(NotFound):  # nor by Engram's id, in an environment bob cannot see
        engram.extraction.get_conversation(own.id, bob)
    assert len(engram.extraction.messages("chat-7", LOCAL).items) == 1


def test_rest_another_users_id_is_usable(live: Live) -> None:
    _, bob_token = live.new_user("bob")
    msgs = {"messages": [{"role": "user", "content": "I prefer tea over coffee."}]}
    with live.client(live.owner_token) as owner:
        r = owner.post("/api/v1/conversations/team-sync/messages", json=msgs)
        assert r.status_code == 200, r.text
        owners = r.json()["conversation_id"]
    with live.client(bob_token) as bob:
        assert bob.get("/api/v1/conversations/team-sync").status_code == 404
        r = bob.post("/api/v1/conversations/team-sync/messages", json=msgs)
        assert r.status_code == 200, r.text
        assert r.json()["conversation_id"] != owners
        got = bob.get("/api/v1/conversations/team-sync").json()
        assert got["external_id"] == "team-sync" and got["id"] != owners
        assert bob.get(f"/api/v1/conversations/{owners}").status_code == 404


def test_thread_filter_takes_the_callers_own_conversation_id(engram: Engram) -> None:
    """A listing, a search and an export filtered by thread take the id the caller gave the
    conversation, as /conversations/{id} does (walkthrough 32, finding 11)."""
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    done = engram.extraction.add_messages("chat-1", HELLO, LOCAL)
    engram.extraction.add_messages("chat-1", HELLO, bob)  # bob's own chat-1: not the owner's
    by_engram_id = MemoryFilter(threads=[done.conversation_id])
    expected = {m.id for m in engram.memories.list_memories(LOCAL, by_engram_id).items}
    assert expected  # the delivered message, kept as a memory of that thread
    by_own_id = MemoryFilter(threads=["chat-1"])
    assert {m.id for m in engram.memories.list_memories(LOCAL, by_own_id).items} == expected
    found = engram.search.search("tea", LOCAL, flt=by_own_id, mode=SearchMode.KEYWORD)
    assert {i.memory.id for i in found.items} == expected
    exported = engram.exports.memory_data(LOCAL, flt=by_own_id).memories
    assert {m.id for m in exported} == expected
    # bob's chat-1 is another conversation; the owner's memories are not his to filter
    assert {m.id for m in engram.memories.list_memories(bob, by_own_id).items}.isdisjoint(expected)
    # a session id (what capture and MCP put in thread) still matches as given
    session = engram.memories.add(NewMemory(content="From a session", thread="sess-9"), LOCAL)
    listed = engram.memories.list_memories(LOCAL, MemoryFilter(threads=["sess-9"])).items
    assert [m.id for m in listed] == [session.id]


def test_rest_thread_filter_takes_the_callers_conversation_id(live: Live) -> None:
    said = [{"role": "user", "content": "I prefer tea over coffee.", "author": "Ann"}]
    body = {"conversation": {"id": "chat-1"}, "messages": said}
    with live.client(live.owner_token) as owner:
        r = owner.post("/api/v1/extract", json=body)
        assert r.status_code == 200, r.text
        engram_id = r.json()["conversation_id"]
        by_engram_id = owner.get("/api/v1/facts", params={"thread": engram_id}).json()
        by_own_id = owner.get("/api/v1/facts", params={"thread": "chat-1"}).json()
    assert by_engram_id["total"] >= 1
    assert by_own_id["items"] == by_engram_id["items"]


NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _legacy_sqlite(path: Path) -> None:
    """A database as it was before 0014: a conversation whose id is the caller's."""
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, tuple(m for m in MIGRATIONS if m.name < "0014"))
    conn.execute(
        "INSERT INTO environments (id, name, owner, created_at) VALUES "
        "('env_old', 'default', 'local', 0)"
    )
    conn.execute(
        "INSERT INTO conversations (id, environment_id, source, created_at) "
        "VALUES ('chat-legacy', 'env_old', 'api', 0)"
    )
    conn.execute(
        "INSERT INTO conversation_messages (conversation_id, position, id, role, content, "
        "dedup_key) VALUES ('chat-legacy', 1, 'msg_old', 'user', 'I like tea.', 'x:1')"
    )
    conn.close()


def _legacy_postgres(url: str) -> None:
    """The same, on PostgreSQL: 0010 undone on a migrated database, then the old rows."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX conversations_owner_external")
        conn.execute("ALTER TABLE conversations DROP COLUMN owner, DROP COLUMN external_id")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0010_conversation_owner'")
        conn.execute(
            "INSERT INTO environments (id, name, owner, created_at) "
            "VALUES ('env_old', 'default', 'local', %s)",
            (NOW,),
        )
        conn.execute(
            "INSERT INTO conversations (id, environment_id, source, created_at) "
            "VALUES ('chat-legacy', 'env_old', 'api', %s)",
            (NOW,),
        )
        conn.execute(
            "INSERT INTO conversation_messages (conversation_id, position, id, role, content, "
            "dedup_key) VALUES ('chat-legacy', 1, 'msg_old', 'user', 'I like tea.', 'x:1')"
        )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_existing_conversations_migrate(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if backend == "sqlite":
        path = tmp_path / "old.db"
        _legacy_sqlite(path)
        store: SQLiteStore | PostgresStore = SQLiteStore(path)
    else:
        url = request.getfixturevalue("pg_url")
        _legacy_postgres(url)
        store = PostgresStore(url)
    with Engram(store) as engram:
        conv = engram.extraction.get_conversation("chat-legacy", LOCAL)
        assert (conv.id, conv.owner, conv.external_id) == ("chat-legacy", "local", "chat-legacy")
        assert [m.content for m in engram.extraction.messages("chat-legacy", LOCAL).items] == [
            "I like tea."
        ]
        again = engram.extraction.add_messages("chat-legacy", HELLO, LOCAL)
        assert again.conversation_id == "chat-legacy" and again.messages_added == 1
        bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
        assert engram.extraction.add_messages("chat-legacy", HELLO, bob).messages_added == 1
