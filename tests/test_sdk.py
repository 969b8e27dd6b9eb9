"""The SDK against a live server: same models, same exceptions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engram import (
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    NotFound,
    PermissionDenied,
    ProcedureDetails,
)
from engram.accounts import AuditQuery, Role, Scope
from engram.models import Memory
from engram.sdk import AsyncClient, Client
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture


def test_client_happy_path(live: Live) -> None:
    with Client(live.url, live.owner_token) as c:
        env = c.environments.create("sdk")
        fact = c.facts.add(NewMemory(content="Prefers pnpm", tags=["js"]), env.id)
        assert isinstance(fact, Memory) and fact.environment_id == env.id
        more = c.facts.add_many(
            [NewMemory(content="a", thread="chat-1"), NewMemory(content="b")], env.id
        )
        in_thread = c.facts.list(MemoryFilter(threads=["chat-1"]), environment=env.id)
        assert [m.id for m in in_thread.items] == [more[0].id] and more[0].thread == "chat-1"
        edited = c.facts.update(fact.id, MemoryPatch(content="Prefers bun"), reason="switched")
        assert edited.version == 2
        assert [v.reason for v in c.facts.history(fact.id)] == ["", "switched"]
        assert c.facts.restore(fact.id, version=1).content == "Prefers pnpm"
        assert c.facts.list(environment=env.id).total == 3
        c.facts.delete_many([m.id for m in more])
        assert c.facts.purge([more[0].id]) == 1
        ep = c.episodes.add(NewMemory(layer=Layer.EPISODE, content="Debugged uploads"), env.id)
        assert c.episodes.get(ep.id).layer is Layer.EPISODE
        proc = c.procedures.add(
            NewMemory(
                layer=Layer.PROCEDURE,
                content="Release",
                procedure=ProcedureDetails(name="release", steps=["tag", "push"]),
            ),
            env.id,
        )
        done = c.procedures.record_outcome(proc.id, success=True, note="smooth")
        assert done.procedure is not None and done.procedure.success_count == 1
        with pytest.raises(NotFound):
            c.facts.get(ep.id)  # an episode is not a fact
        assert c.accounts.me().id == "local"
        user = c.accounts.create_user("dana")
        c.environments.share(env.id, user.id, Role.READER)
        assert [m.role for m in c.environments.members(env.id)] == [Role.OWNER, Role.READER]
        issued = c.accounts.create_key("dana-laptop", [Scope.READ, Scope.WRITE], user_id=user.id)
        audit = c.accounts.audit(AuditQuery(target=fact.id))
        assert [e.action for e in audit][::-1][:2] == ["memory.create", "memory.update"]
    with Client(live.url, issued.token) as d:
        assert d.facts.get(fact.id).content == "Prefers pnpm"
        with pytest.raises(PermissionDenied):
            d.facts.update(fact.id, MemoryPatch(content="nope"))


def test_async_client(live: Live) -> None:
    async def main() -> None:
        async with AsyncClient(live.url, live.owner_token) as c:
            m = await c.facts.add(NewMemory(content="async works"))
            page = await c.facts.list()
            assert [x.id for x in page.items] == [m.id]
            with pytest.raises(NotFound):
                await c.facts.get("mem_missing")

    asyncio.run(main())


def test_ids_in_a_path_are_escaped_or_refused_by_name(live: Live) -> None:
    """Walkthrough 34: add_messages('user:42/session:1', …) answered a bare 'Not Found' and
    'x?y=1' a 'Method Not Allowed'. Now a '/' is refused before the request, naming the id,
    and '?' reaches the server as itself: the server's own error names what is wrong."""
    from engram.errors import InvalidInput
    from engram.extraction.conversation import NewMessage, Speaker

    hello = [NewMessage(role=Speaker.USER, content="hello")]
    with Client(live.url, live.owner_token) as c:
        with pytest.raises(InvalidInput, match="'user:42/session:1' cannot name"):
            c.extraction.add_messages("user:42/session:1", hello)
        with pytest.raises(InvalidInput, match="conversation_id"):
            c.extraction.add_messages("x?y=1", hello)
        with pytest.raises(NotFound, match="mem_a#b"):
            c.facts.get("mem_a#b")
        assert c.extraction.add_messages("user:42:session:1", hello).messages_added == 1


def test_token_and_url_from_env_and_file(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_URL", live.url)
    monkeypatch.setenv("ENGRAM_HOME", str(live.home))
    monkeypatch.delenv("ENGRAM_TOKEN", raising=False)
    with Client() as c:  # token read from <home>/token
        assert c.accounts.me().id == "local"
    monkeypatch.setenv("ENGRAM_TOKEN", "egm_not-a-key")
    from engram import Unauthenticated

    with Client() as c, pytest.raises(Unauthenticated):
        c.accounts.me()
    monkeypatch.delenv("ENGRAM_TOKEN")
    monkeypatch.setenv("ENGRAM_HOME", str(Path(live.home) / "empty"))
    with pytest.raises(Unauthenticated, match="engram init"):
        Client()


def test_a_list_given_an_environment_where_a_filter_goes_says_so(live: Live) -> None:
    """Walkthrough 34: facts.list('user-bob') raised AttributeError: 'str' object has no
    attribute 'categories' (context and search take the environment first)."""
    from engram.errors import InvalidInput

    wanted = r"call list\(environment='user-bob'\)"
    with Client(live.url, live.owner_token) as c, pytest.raises(InvalidInput, match=wanted):
        c.facts.list("user-bob")  # type: ignore[arg-type]


def test_a_dot_segment_in_a_path_stays_a_name(live: Live) -> None:
    """A review of stop 34: sharing by user name sends names into paths, and a user named
    '..' made unshare('empty', '..') a DELETE of the environment itself (the dot segment
    resolved away)."""
    from engram.errors import NotFound as Missing

    with Client(live.url, live.owner_token) as c:
        c.accounts.create_user("..")
        c.environments.create("empty")
        with pytest.raises(Missing, match="not a member"):
            c.environments.unshare("empty", "..")
        assert "empty" in [e.name for e in c.environments.list()]
