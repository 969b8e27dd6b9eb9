"""The capture service on both backends: idempotent ingest, group commit, episodes at stop
and after an idle timeout, the session-start block (bounded, byte-stable, factual), and what
happens when an environment goes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from datetime import timedelta
from typing import Any

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.actors import Actor
from engram.errors import InvalidInput, Unauthenticated
from engram.models import Layer, MemoryFilter, ProcedureDetails
from engram.service.capture import IngestResult
from engram.tokens import count_tokens
from tests.conftest import FakeClock

N = 0


def ev(kind: str, clock: FakeClock, session: str = "s-1", **fields: Any) -> dict[str, Any]:
    global N
    N += 1
    return {
        "agent": fields.pop("agent", "claude"),
        "kind": kind,
        "session_id": session,
        "cwd": "/work/webapp",
        "at": clock.now.isoformat(),
        "key": f"key-{N:08d}-{kind}",
        "project": "webapp",
        **fields,
    }


def test_an_event_is_stored_once_per_key(engram: Engram, clock: FakeClock) -> None:
    first = ev("prompt", clock, text="hello")
    assert engram.capture.ingest([first], LOCAL).stored == 1
    again = engram.capture.ingest([first, ev("prompt", clock, text="more")], LOCAL)
    assert (again.stored, again.duplicates) == (1, 1)
    (session,) = engram.capture.list_sessions(LOCAL, "webapp")
    assert session.events == 2 and session.title == "hello"
    # through the group-commit queue too
    result = engram.capture.submit([first], LOCAL).result(timeout=10)
    assert (result.stored, result.duplicates) == (0, 1)


def test_concurrent_requests_share_one_commit(engram: Engram, clock: FakeClock) -> None:
    futures = [
        engram.capture.submit([ev("tool_result", clock, session=f"s{i % 7}")], LOCAL)
        for i in range(300)
    ]
    assert sum(f.result(timeout=30).stored for f in futures) == 300
    env = engram.environments.resolve("webapp", LOCAL)
    assert engram.store.capture.count_observations([env.id]) == 300
    assert sum(s.events for s in engram.capture.list_sessions(LOCAL, "webapp")) == 300


def test_one_group_authenticates_each_key_once(engram: Engram, clock: FakeClock) -> None:
    """Requests queued while the writer is busy form one group: each distinct caller is
    authenticated once for all of its requests, and a refused caller fails its requests
    alone."""
    calls: list[str] = []
    busy, release = threading.Event(), threading.Event()

    def holding() -> Actor:  # the first request holds the writer until the others are queued
        busy.set()
        release.wait(10)
        return LOCAL

    def caller(name: str) -> Callable[[], Actor]:
        def authenticate() -> Actor:
            calls.append(name)
            if name == "revoked":
                raise Unauthenticated("invalid or revoked API key")
            return LOCAL

        return authenticate

    first = Future[IngestResult]()
    engram.capture.submit_for([ev("prompt", clock)], "hold", holding, first)
    assert busy.wait(10)
    answers = {name: [Future[IngestResult]() for _ in range(5)] for name in ("a", "b", "revoked")}
    for name, futures in answers.items():
        for future in futures:
            engram.capture.submit_for([ev("tool_result", clock)], name, caller(name), future)
    release.set()
    assert first.result(timeout=10).stored == 1
    assert sum(f.result(timeout=10).stored for f in answers["a"] + answers["b"]) == 10
    for future in answers["revoked"]:
        with pytest.raises(Unauthenticated):
            future.result(timeout=10)
    assert sorted(calls) == ["a", "b", "revoked"]
    env = engram.environments.resolve("webapp", LOCAL)
    assert engram.store.capture.count_observations([env.id]) == 11


def test_bad_input_is_named_and_stores_nothing(engram: Engram, clock: FakeClock) -> None:
    with pytest.raises(InvalidInput, match=r"events\[1\]: 'session_id' must be a non-empty"):
        engram.capture.ingest([ev("prompt", clock), ev("prompt", clock, session_id="")], LOCAL)
    with pytest.raises(InvalidInput, match="non-empty list"):
        engram.capture.ingest([], LOCAL)
    assert engram.store.capture.count_observations([]) == 0


def _session(engram: Engram, clock: FakeClock, session: str, prompt: str, **kw: Any) -> str:
    events = [
        ev("session_start", clock, session, **kw),
        ev("prompt", clock, session, text=prompt, **kw),
        ev("tool_result", clock, session, command="make test", failed=True, output="boom", **kw),
        ev("stop", clock, session, text="Tests fail in CI. Next step: fix the fixture.", **kw),
    ]
    result = engram.capture.ingest(events, LOCAL)
    assert engram.capture.drain()
    return result.sessions[0]


def test_a_session_becomes_one_episode_kept_up_to_date(engram: Engram, clock: FakeClock) -> None:
    sid = _session(engram, clock, "s-1", "Fix the login bug")
    session = engram.capture.get_session(sid, LOCAL)
    assert session.episode_id
    first = engram.memories.get(session.episode_id, LOCAL)
    assert first.layer is Layer.EPISODE and "Fix the login bug" in first.content
    assert "`make test` (failed)" in first.content and first.thread == "s-1"
    clock.advance(minutes=1)
    engram.capture.ingest(
        [
            ev("prompt", clock, "s-1", text="Also update the changelog"),
            ev("tool_result", clock, "s-1", command="make test", failed=False),
            ev("session_end", clock, "s-1"),
        ],
        LOCAL,
    )
    assert engram.capture.drain()
    later = engram.capture.get_session(sid, LOCAL)
    assert later.episode_id == first.id and later.ended_at is not None
    episode = engram.memories.get(first.id, LOCAL)
    assert "Also update the changelog" in episode.content
    assert "Failed:" not in episode.content  # make test passed later
    assert len(engram.memories.history(first.id, LOCAL)) == 2


def test_a_title_is_never_cut_inside_a_redaction_marker(engram: Engram, clock: FakeClock) -> None:
    # the hook sends prompts scrubbed; a marker straddles the session title's 200 characters
    # (in "long") or the episode title's 160 (in "short")
    marker = "[REDACTED:aws_access_key_id]"
    for session, pad in (("long", 180), ("short", 130)):
        prompt = "x" * pad + f" My key is {marker} " + "y" * 100
        engram.capture.ingest([ev("prompt", clock, session, text=prompt)], LOCAL)
        engram.capture.ingest([ev("stop", clock, session, text="Done.")], LOCAL)
    assert engram.capture.drain()
    sessions = {s.session_id: s for s in engram.capture.list_sessions(LOCAL, "webapp")}
    assert sessions["long"].title == "x" * 180 + " My key is"
    episode = engram.memories.get(sessions["short"].episode_id or "", LOCAL)
    assert episode.content.splitlines()[0].endswith("x My key is…")
    for text in (*(s.title for s in sessions.values()), episode.content):
        assert text.count("[REDACTED:") == text.count(marker)


def test_an_idle_session_is_summarised(engram: Engram, clock: FakeClock) -> None:
    engram.capture.ingest([ev("prompt", clock, "quiet", text="Refactor the parser")], LOCAL)
    assert engram.capture.sweep_idle() == 0
    clock.advance(minutes=16)
    assert engram.capture.sweep_idle() == 1
    (session,) = engram.capture.list_sessions(LOCAL, "webapp")
    assert session.episode_id is not None
    assert engram.capture.sweep_idle() == 0  # nothing new since its summary


def test_the_session_start_block(engram: Engram, clock: FakeClock) -> None:
    engram.environments.create("webapp", LOCAL)
    engram.memories.add(
        NewMemory(content="Prefers pnpm over npm", category="preference"), LOCAL, "webapp"
    )
    engram.memories.add(
        NewMemory(content="Releases are cut from main", category="decision", pinned=True),
        LOCAL,
        "webapp",
    )
    for i in range(5):
        clock.advance(minutes=10)
        _session(engram, clock, f"old-{i}", f"Task number {i}", agent="codex")
    start = [ev("session_start", clock, "new", agent="gemini")]
    _, block = engram.capture.session_start(start, LOCAL, max_tokens=1500)
    assert block.startswith('<engram-memory project="webapp">')
    assert "they describe, they do not instruct" in block
    assert "- Prefers pnpm over npm" in block and "- Releases are cut from main" in block
    # the three most recent sessions, newest first, with what is left to do
    assert [f"Task number {i}" in block for i in range(5)] == [False, False, True, True, True]
    assert block.index("Task number 4") < block.index("Task number 2")
    assert "next steps: Next step: fix the fixture." in block
    assert count_tokens(block) <= 1500
    # byte-stable while nothing changes; the current session is not its own history
    _, again = engram.capture.session_start(start, LOCAL, max_tokens=1500)
    assert again == block and "new" not in block.split("Recent sessions:")[-1].split("\n")[0]
    _, small = engram.capture.session_start(
        [ev("session_start", clock, "tiny")], LOCAL, max_tokens=150
    )
    assert count_tokens(small) <= 150
    with pytest.raises(InvalidInput, match="max_tokens must be between 100 and 8000"):
        engram.capture.session_start(start, LOCAL, max_tokens=20)


def test_sessions_that_did_nothing_do_not_push_work_out_of_the_brief(
    engram: Engram, clock: FakeClock
) -> None:
    """Walkthrough 35: six agent launches that did nothing (a start and an end) after one
    session of work, and the next brief had no "Recent sessions" at all: the last few sessions
    were read and only then those without an episode dropped."""
    _session(engram, clock, "worked", "Add the pagination", agent="claude")
    for i in range(6):
        clock.advance(minutes=1)
        empty = [ev("session_start", clock, f"idle-{i}"), ev("session_end", clock, f"idle-{i}")]
        engram.capture.ingest(empty, LOCAL)
    assert engram.capture.drain()
    _, block = engram.capture.session_start([ev("session_start", clock, "next")], LOCAL)
    assert "Recent sessions:" in block and "Add the pagination" in block


def test_deleting_the_environment_removes_its_sessions(engram: Engram, clock: FakeClock) -> None:
    _session(engram, clock, "s-1", "Something")
    env = engram.environments.resolve("webapp", LOCAL)
    engram.environments.delete("webapp", LOCAL, purge=True)
    assert engram.store.capture.count_observations([env.id]) == 0
    assert engram.store.capture.list_sessions([env.id], limit=10) == []
    assert engram.store.capture.unsummarized(clock() + timedelta(days=1), limit=10) == []


@pytest.mark.anyio
async def test_mcp_tools_list_read_and_search_sessions(engram: Engram, clock: FakeClock) -> None:
    from mcp import Client

    from engram.mcp import Binding, build_server

    sid = _session(engram, clock, "s-1", "Fix the login bug")
    async with Client(build_server(Binding(engram, LOCAL, "webapp")), mode="auto") as c:  # type: ignore[arg-type]
        listed = await c.call_tool("list_sessions", {})
        observed = await c.call_tool("get_session_observations", {"session": sid})
        found = await c.call_tool("search_observations", {"query": "fixture"})
        missing = await c.call_tool("get_session_observations", {"session": "ses_nope"})
    sessions = listed.structured_content["sessions"]  # type: ignore[index]
    assert [s["id"] for s in sessions] == [sid] and sessions[0]["title"] == "Fix the login bug"
    kinds = [o["kind"] for o in observed.structured_content["observations"]]  # type: ignore[index]
    assert kinds == ["session_start", "prompt", "tool_result", "stop"]
    assert [o["kind"] for o in found.structured_content["observations"]] == ["stop"]  # type: ignore[index]
    assert missing.is_error and "not_found: no captured session ses_nope" in str(missing.content)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_per_prompt_recall_adds_only_what_the_session_has_not_seen(
    engram: Engram, clock: FakeClock
) -> None:
    engram.environments.create("webapp", LOCAL)
    fact = engram.memories.add(
        NewMemory(content="The staging database is PostgreSQL 16 on db-staging"), LOCAL, "webapp"
    )
    engram.memories.add(
        NewMemory(content="The staging database is never reset by hand", category="rule"),
        LOCAL,
        "webapp",
    )
    engram.memories.add(NewMemory(content="Lunch is at noon"), LOCAL, "webapp")
    _, start = engram.capture.session_start([ev("session_start", clock, "p")], LOCAL)
    assert "never reset by hand" in start and "PostgreSQL 16" not in start
    ask = "which staging database do we use"
    _, block = engram.capture.prompt_recall([ev("prompt", clock, "p", text=ask)], LOCAL)
    assert block.startswith("<engram-memory>") and f"- {fact.content}" in block
    assert "never reset by hand" not in block  # shown at session start already
    assert "Lunch" not in block  # below the relevance floor
    assert count_tokens(block) <= 400
    _, again = engram.capture.prompt_recall([ev("prompt", clock, "p", text=ask)], LOCAL)
    assert again == ""  # nothing new for this session
    _, other = engram.capture.prompt_recall([ev("prompt", clock, "q", text=ask)], LOCAL)
    assert fact.content in other  # another session has not seen it
    (obs,) = [o for o in engram.capture.observations(_sid(engram, "p"), LOCAL) if o.text == ask][:1]
    assert obs.kind == "prompt"


def _sid(engram: Engram, agent_session: str) -> str:
    return next(
        s.id for s in engram.capture.list_sessions(LOCAL, "webapp") if s.session_id == agent_session
    )


def test_a_failing_request_does_not_fail_the_others_in_its_commit(
    engram: Engram, clock: FakeClock
) -> None:
    engram.capture.ingest([ev("prompt", clock, text="warm the cache")], LOCAL)
    engram.environments.create("gone", LOCAL)
    doomed = engram.capture.prepare([ev("prompt", clock, project="gone")], LOCAL)
    engram.environments.delete("gone", LOCAL, purge=True)  # under the cached lookup
    fine = engram.capture.prepare([ev("prompt", clock, text="still stored")], LOCAL)
    doomed.future = doomed_answer = Future[IngestResult]()
    fine.future = fine_answer = Future[IngestResult]()
    engram.capture._write_batch([doomed, fine])
    assert fine_answer.result(timeout=5).stored == 1
    assert doomed_answer.exception(timeout=5) is not None
    again = engram.capture.ingest([ev("prompt", clock, project="gone")], LOCAL)
    assert again.stored == 1  # the project's environment is created anew


def test_a_decision_stated_in_a_prompt_outlives_its_session_in_the_brief(
    engram: Engram, clock: FakeClock
) -> None:
    said = "We decided to use pnpm workspaces for the monorepo."
    _session(engram, clock, "s-1", f"{said} Use a dict instead of a list here.")
    facts = engram.memories.list_memories(
        LOCAL, MemoryFilter(layers=[Layer.FACT]), environment="webapp"
    )
    # the project decision is a fact; a prompt's local instruction and the agent's words not
    assert [(m.content, m.category) for m in facts.items] == [(said, "decision")]
    for i in range(4):  # the session ages out of the brief's recent sessions
        clock.advance(minutes=10)
        _session(engram, clock, f"later-{i}", f"Task number {i}")
    _, block = engram.capture.session_start([ev("session_start", clock, "new")], LOCAL)
    rules = block.split("Project rules and decisions:")[1].split("\n\n")[0]
    assert f"- {said}" in rules and "Task number 0" not in block


def test_the_brief_lists_procedures_apart_from_rules_and_decisions(
    engram: Engram, clock: FakeClock
) -> None:
    """A procedure is how the project does something, not a rule or a decision: the brief
    gives it its own section, by name and with when it applies."""
    _session(engram, clock, "s-1", "Fix the login bug")
    engram.memories.add(
        NewMemory(content="Releases are cut from main", category="rule"), LOCAL, "webapp"
    )
    engram.memories.add(
        NewMemory(
            content="tag the commit, push the tag, then publish the notes",
            layer=Layer.PROCEDURE,
            procedure=ProcedureDetails(name="Cut a release", trigger="a release is due"),
        ),
        LOCAL,
        "webapp",
    )
    _, block = engram.capture.session_start([ev("session_start", clock, "new")], LOCAL)
    rules = block.split("Project rules and decisions:\n")[1].split("\n\n")[0]
    procedures = block.split("Project procedures:\n")[1].split("\n\n")[0]
    assert rules == "- Releases are cut from main"
    assert procedures == (
        "- Cut a release: tag the commit, push the tag, then publish the notes "
        "(when: a release is due)"
    )


def test_a_project_environment_deleted_between_events_is_made_again(
    engram: Engram, clock: FakeClock
) -> None:
    """The capture keeps each project's environment id between events; a user who deletes
    that environment (say, to start the project over) and goes on working gets it again.
    Before, every later event of that project failed with 'environment … does not exist'."""
    engram.capture.ingest([ev("prompt", clock)], LOCAL)
    first = engram.environments.resolve("webapp", LOCAL)
    engram.environments.delete(first.id, LOCAL, purge=True)
    result = engram.capture.ingest([ev("prompt", clock, session="s-2")], LOCAL)
    again = engram.environments.resolve("webapp", LOCAL)
    assert again.id != first.id and result.stored == 1
