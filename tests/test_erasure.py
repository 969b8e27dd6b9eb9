"""Deletion that means it, on both backends: a conversation deleted (its messages) and purged
(and the memories extracted from it), an account purged with everything that is theirs; after
each, a scan of every table (and on SQLite the database file and its WAL, byte by byte, after a
checkpoint) finds none of the removed text; refusals leave the store as it was; the CLI, REST,
SDK and MCP edges."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from mcp import Client as McpClient

from engram import LOCAL, Engram, Settings
from engram.accounts import AuditQuery, Role, Scope
from engram.actors import Actor
from engram.cli import main
from engram.errors import Conflict, NotFound, PermissionDenied
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.results import ConversationInput
from engram.mcp import Binding, build_server
from engram.models import MemoryFilter, NewMemory, Status
from engram.sdk import Client
from engram.store.sqlite import SQLiteStore
from tests import test_import_jobs
from tests.access_world import STRANGER_MARK, plant_stranger
from tests.sql import backend
from tests.test_purge_leaves_nothing import _rows_mentioning

GONE = "quokkamarkergone"
KEPT = "wombatmarkerkept"
ALL = MemoryFilter(statuses=list(Status))


def _conversation(engram: Engram, actor: Actor, env: str | None, key: str, mark: str) -> str:
    result = engram.extraction.extract(
        ConversationInput(
            conversation=NewConversation(id=key),
            messages=[
                NewMessage(role=Speaker.USER, content=f"We decided to use {mark} for billing."),
                NewMessage(role=Speaker.ASSISTANT, content=f"Noted: {mark} it is."),
            ],
        ),
        actor,
        env,
    )
    assert result.conversation_id is not None and result.outcomes
    return result.conversation_id


def _bytes_hold(engram: Engram, text: str) -> bool:
    """Whether the SQLite file or its WAL holds ``text`` (after a checkpoint); False on
    PostgreSQL (its rows are checked by :func:`_rows_mentioning`)."""
    raw = backend(engram.store)
    if not isinstance(raw, SQLiteStore):
        return False
    with sqlite3.connect(raw.path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("", "-wal"):
        file = Path(f"{raw.path}{suffix}")
        if file.exists() and text.encode() in file.read_bytes():
            return True
    return False


def _audit_text(engram: Engram) -> str:
    return " ".join(e.model_dump_json() for e in engram.audit.query(AuditQuery(limit=1000), LOCAL))


def test_delete_then_purge_a_conversation(engram: Engram) -> None:
    gone = _conversation(engram, LOCAL, None, "chat-gone", GONE)
    kept = _conversation(engram, LOCAL, None, "chat-kept", KEPT)
    extracted = engram.store.count(MemoryFilter(threads=[gone], statuses=list(Status)))
    assert extracted > 0 and _rows_mentioning(engram.store, GONE)
    # a delete removes the conversation and its messages; its memories stay
    erased = engram.erasure.delete_conversation("chat-gone", LOCAL)
    assert erased.removed["conversations"] == 1 and erased.removed["messages"] == 2
    assert erased.memories == [] and erased.removed["memories"] == 0
    with pytest.raises(NotFound):
        engram.extraction.get_conversation(gone, LOCAL)
    assert engram.store.count(MemoryFilter(threads=[gone], statuses=list(Status))) == extracted
    # a purge of another removes what was extracted from it too, every version
    third = _conversation(engram, LOCAL, None, "chat-third", "Tortoisemarker")
    purged = engram.erasure.delete_conversation(third, LOCAL, purge=True)
    assert purged.memories and purged.removed["memories"] == len(purged.memories)
    assert engram.store.get(purged.memories) == []
    assert _rows_mentioning(engram.store, "Tortoisemarker") == []
    assert not _bytes_hold(engram, "Tortoisemarker")
    assert engram.extraction.get_conversation(kept, LOCAL).id == kept  # the others stay
    assert _rows_mentioning(engram.store, KEPT)
    logged = _audit_text(engram)
    assert "conversation.purge" in logged and "conversation.delete" in logged
    assert "Tortoisemarker" not in logged and GONE not in logged
    with pytest.raises(NotFound):
        engram.erasure.delete_conversation(gone, LOCAL)


def test_a_conversation_is_deleted_by_its_writer_purged_by_the_owner(engram: Engram) -> None:
    dana = Actor(engram.accounts.create_user("dana", LOCAL).id, "local")
    eve = Actor(engram.accounts.create_user("eve", LOCAL).id, "local")
    env = engram.environments.create("team", LOCAL)
    engram.environments.share(env.id, dana.user_id, Role.WRITER, LOCAL)
    engram.environments.share(env.id, eve.user_id, Role.WRITER, LOCAL)
    conv = _conversation(engram, dana, env.id, "d-1", GONE)
    before = engram.store.count(ALL)
    with pytest.raises(PermissionDenied):
        engram.erasure.delete_conversation(conv, dana, purge=True)  # a purge needs the owner
    with pytest.raises(NotFound):
        engram.erasure.delete_conversation("d-1", eve)  # eve's "d-1" is her own id: none
    with pytest.raises(PermissionDenied):
        engram.erasure.delete_conversation(conv, eve)  # another's conversation
    assert engram.store.count(ALL) == before
    assert engram.erasure.delete_conversation("d-1", dana).conversations == [conv]


def test_purging_an_account_leaves_its_text_nowhere(engram: Engram, tmp_path: Path) -> None:
    plant_stranger(engram)  # the marker in every kind of record, in the stranger's environment
    stranger = next(u for u in engram.accounts.list_users(LOCAL) if u.name == "stranger")
    who = Actor(stranger.id, "local")
    engram.accounts.issue_key(LOCAL, "laptop", (Scope.READ, Scope.WRITE), user_id=stranger.id)
    # in an environment others own: the stranger's conversation and memory go, the rest stays
    team = engram.environments.create("team", LOCAL)
    engram.environments.share(team.id, stranger.id, Role.WRITER, LOCAL)
    _conversation(engram, who, team.id, "t-1", f"{STRANGER_MARK}db")
    engram.lifecycle.remember(
        NewMemory(content=f"{STRANGER_MARK} deploys on Fridays"), who, team.id
    )
    ours = engram.lifecycle.remember(
        NewMemory(content=f"{KEPT} the team deploys with Helm"), LOCAL, team.id
    ).memory
    upload = tmp_path / "export.txt"
    upload.write_text(f"[2026-01-05] - {STRANGER_MARK} prefers tea\n")
    with upload.open("rb") as f:
        engram.import_jobs.upload("export.txt", f, who)
    assert _rows_mentioning(engram.store, STRANGER_MARK)  # the scan sees the planted text
    assert _bytes_hold(engram, STRANGER_MARK) or not isinstance(backend(engram.store), SQLiteStore)
    erased = engram.erasure.delete_user(stranger.id, LOCAL, purge=True)
    assert erased.user_id == stranger.id and erased.removed["environments"] >= 1
    assert erased.removed["users"] == 1 and erased.removed["api_keys"] == 1
    assert erased.removed["import_jobs"] == 1 and erased.removed["memories"] > 3
    assert _rows_mentioning(engram.store, STRANGER_MARK) == []
    assert not _bytes_hold(engram, STRANGER_MARK)
    assert not any(STRANGER_MARK.encode() in p.read_bytes() for p in _files(engram))
    assert STRANGER_MARK not in _audit_text(engram)
    assert engram.memories.get(ours.id, LOCAL).content.startswith(KEPT)  # others' knowledge
    assert [m.user_id for m in engram.environments.members("team", LOCAL)] == [LOCAL.user_id]
    with pytest.raises(NotFound):
        engram.accounts.get_user(stranger.id, LOCAL)


def _files(engram: Engram) -> list[Path]:
    return [p for p in engram.import_jobs.root.rglob("*") if p.is_file()]


def test_account_deletion_refusals_change_nothing(engram: Engram) -> None:
    engram.accounts.ensure_owner("owner")
    dana = Actor(engram.accounts.create_user("dana", LOCAL).id, "local")
    env = engram.environments.create("danas", dana)
    engram.lifecycle.remember(NewMemory(content=f"{GONE} is dana's"), dana, env.id)
    before = (engram.store.count(ALL), len(engram.accounts.list_users(LOCAL)))
    with pytest.raises(PermissionDenied):
        engram.erasure.delete_user(
            LOCAL.user_id, Actor(dana.user_id, "api", scopes=frozenset({Scope.READ, Scope.WRITE}))
        )
    with pytest.raises(Conflict, match="acting as"):
        engram.erasure.delete_user(LOCAL.user_id, LOCAL, purge=True)
    with pytest.raises(Conflict, match="purge"):
        engram.erasure.delete_user(dana.user_id, LOCAL)  # she owns an environment
    with pytest.raises(NotFound):
        engram.erasure.delete_user("usr_nobody", LOCAL, purge=True)
    eve = engram.accounts.create_user("eve", LOCAL)
    engram.environments.share(env.id, eve.id, Role.READER, dana)
    with pytest.raises(Conflict, match="danas"):
        engram.erasure.delete_user(dana.user_id, LOCAL, purge=True)  # others are members
    assert (engram.store.count(ALL), len(engram.accounts.list_users(LOCAL))) == (
        before[0],
        before[1] + 1,
    )
    # an account that owns nothing is deleted without purge: keys, memberships
    deleted = engram.erasure.delete_user(eve.id, LOCAL)
    assert deleted.removed["users"] == 1 and deleted.removed["environment_members"] == 1


def test_cli_deletes_conversations_and_purges_users(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "cli-home"
    with Engram.open(Settings.load(home)) as local:
        conv = _conversation(local, LOCAL, None, "cli-1", GONE)
        dana = local.accounts.create_user("dana", LOCAL)
        local.environments.create("danas", Actor(dana.id, "local"))
    h = ["--home", str(home)]
    assert main([*h, "conversations", "delete", conv, "--purge", "--yes"]) == 0
    out = capsys.readouterr().out
    assert "removed for good" in out and "1 conversations" in out and "kept: audit" in out
    assert main([*h, "users", "delete", dana.id, "--yes"]) == 1
    assert "purge" in capsys.readouterr().err
    assert main([*h, "users", "delete", dana.id, "--purge", "--yes", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"users": 1' in out and '"environments": 1' in out
    with Engram.open(Settings.load(home)) as local:
        assert _rows_mentioning(local.store, GONE) == []


@pytest.mark.anyio
async def test_mcp_deletes_a_conversation(engram: Engram) -> None:
    conv = _conversation(engram, LOCAL, None, "mcp-1", GONE)
    server = build_server(Binding(engram, LOCAL, None))
    async with McpClient(server) as c:  # type: ignore[arg-type]
        result = await c.call_tool("delete_conversation", {"conversation_id": conv, "purge": True})
        assert not result.is_error, result
        again = await c.call_tool("delete_conversation", {"conversation_id": conv})
        assert again.is_error
    assert _rows_mentioning(engram.store, GONE) == []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


server = test_import_jobs.server  # a live server over the test's store


def test_rest_and_sdk_delete(engram: Engram, server: tuple[str, str]) -> None:
    url, token = server
    conv = _conversation(engram, LOCAL, None, "rest-1", GONE)
    dana = engram.accounts.create_user("dana", LOCAL)
    engram.environments.create("danas", Actor(dana.id, "local"))
    with Client(url, token) as c:
        with pytest.raises(Conflict):
            c.accounts.delete_user(dana.id)  # she owns an environment: purge or nothing
        erased = c.extraction.delete_conversation(conv, purge=True)
        assert erased.conversations == [conv] and erased.memories
        with pytest.raises(NotFound):
            c.extraction.get_conversation(conv)
        gone = c.accounts.delete_user(dana.id, purge=True)
        assert gone.removed["users"] == 1 and gone.removed["environments"] == 1
    assert _rows_mentioning(engram.store, GONE) == []


def test_a_purge_audit_entry_counts_the_memories_it_removed(engram: Engram) -> None:
    """Its memories count covers their own environments too, as the printout's does (before,
    'memories: 0' beside '2 memories' removed: it counted only those written elsewhere)."""
    bob = engram.accounts.create_user("bob", LOCAL)
    as_bob = Actor(bob.id, "api")
    engram.environments.create("bobs", as_bob)
    for text in ("Bob note one", "Bob likes chess on Sundays"):
        engram.memories.add(NewMemory(content=text), as_bob, "bobs")
    erased = engram.erasure.delete_user(bob.id, LOCAL, purge=True)
    assert erased.removed["memories"] == 2
    (entry,) = engram.audit.query(AuditQuery(action="user.purge"), LOCAL)
    assert entry.details["memories"] == 2 and entry.details["memories_elsewhere"] == 0
