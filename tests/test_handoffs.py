"""Handoffs on both backends: claimed exactly once (concurrent accepts, many rounds), made from
a session's summary when it ends and delivered at the next session start in the same directory
(manual beats automatic, the newest automatic wins and expires the older, held back while the
source session is live, given back by a session that did no work), never delivered once expired
or cancelled, "offer, don't claim", and owned by one user."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engram import LOCAL, Engram, Settings
from engram.accounts import Role
from engram.actors import Actor
from engram.capture.handoffs import HandoffConfig, HandoffMode, handoff_config
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from engram.handoffs import HandoffState
from engram.service.handoffs import TTL
from tests.capture_checks import PROMPT_SECRET, RESULT_SECRET, stored_bytes
from tests.conftest import FakeClock

N = 0
CWD = "/work/webapp"


def ev(kind: str, clock: FakeClock, session: str, **fields: Any) -> dict[str, Any]:
    global N
    N += 1
    return {
        "agent": fields.pop("agent", "claude"),
        "kind": kind,
        "session_id": session,
        "cwd": fields.pop("cwd", CWD),
        "at": clock.now.isoformat(),
        "key": f"hkey-{N:08d}-{kind}",
        "project": "webapp",
        **fields,
    }


def work(
    engram: Engram,
    clock: FakeClock,
    session: str,
    prompt: str,
    *,
    end: bool = True,
    actor: Actor = LOCAL,
    **kw: Any,
) -> str:
    """A session that did something (a prompt, a failing command, a last message), ended."""
    events = [
        ev("session_start", clock, session, **kw),
        ev("prompt", clock, session, text=prompt, **kw),
        ev("tool_result", clock, session, command="make test", failed=True, output="boom", **kw),
        ev("stop", clock, session, text="Tests fail in CI. Next step: fix the fixture.", **kw),
    ]
    if end:
        events.append(ev("session_end", clock, session, **kw))
    result = engram.capture.ingest(events, actor)
    assert engram.capture.drain()
    return result.sessions[0]


def start(
    engram: Engram, clock: FakeClock, session: str, *, actor: Actor = LOCAL, **kw: Any
) -> str:
    """A session start: the block it is given."""
    _, block = engram.capture.session_start([ev("session_start", clock, session, **kw)], actor)
    return block


# -- claimed exactly once ----------------------------------------------------------------------


def test_a_handoff_is_accepted_once_and_a_second_accept_names_who_has_it(
    engram: Engram,
) -> None:
    engram.environments.create("webapp-env", LOCAL)
    h = engram.handoffs.begin(
        "Half-way through the login refactor",
        LOCAL,
        environment="webapp-env",
        from_agent="claude",
        next_steps=["finish the session store"],
    )
    assert h.state is HandoffState.OPEN and h.owner == LOCAL.user_id
    assert [x.id for x in engram.handoffs.list(LOCAL)] == [h.id]
    accepted = engram.handoffs.accept(h.id, LOCAL, agent="codex", session="ses_x")
    assert accepted.state is HandoffState.ACCEPTED and accepted.accepted_agent == "codex"
    with pytest.raises(Conflict, match=rf"handoff {h.id} is already accepted by local in codex"):
        engram.handoffs.accept(h.id, LOCAL, agent="gemini")
    with pytest.raises(Conflict, match="already accepted"):
        engram.handoffs.cancel(h.id, LOCAL)
    assert engram.handoffs.list(LOCAL) == []
    assert [x.id for x in engram.handoffs.list(LOCAL, states=["accepted"])] == [h.id]


def race(engram: Engram, handoff_id: str, threads: int) -> tuple[list[str], list[str]]:
    """``threads`` accepts of one handoff released at once: (winners, losers' messages)."""
    barrier = threading.Barrier(threads)
    wins: list[str] = []
    losses: list[str] = []

    def claim(i: int) -> None:
        barrier.wait()
        try:
            engram.handoffs.accept(handoff_id, LOCAL, agent=f"agent-{i}")
            wins.append(f"agent-{i}")
        except Conflict as exc:
            losses.append(exc.message)

    pool = [threading.Thread(target=claim, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    return wins, losses


def test_concurrent_accepts_exactly_one_wins_every_round(engram: Engram) -> None:
    threads, rounds = 8, 25
    for r in range(rounds):
        h = engram.handoffs.begin(f"round {r}", LOCAL)
        wins, losses = race(engram, h.id, threads)
        assert len(wins) == 1, (r, wins)
        assert len(losses) == threads - 1
        assert all(f"already accepted by local in {wins[0]}" in m for m in losses), losses
        stored = engram.handoffs.get(h.id, LOCAL)
        assert stored.state is HandoffState.ACCEPTED and stored.accepted_agent == wins[0]


def test_bad_input_is_named_and_stores_nothing(engram: Engram) -> None:
    with pytest.raises(InvalidInput, match="the summary is empty"):
        engram.handoffs.begin("  ", LOCAL)
    with pytest.raises(InvalidInput, match=r"next_steps: at most 50 items"):
        engram.handoffs.begin("x", LOCAL, next_steps=["a"] * 51)
    with pytest.raises(InvalidInput, match=r"open_questions must be a list of strings"):
        engram.handoffs.begin("x", LOCAL, open_questions="why?")
    with pytest.raises(NotFound, match="for_user: user 'nobody' does not exist"):
        engram.handoffs.begin("x", LOCAL, for_user="nobody")
    with pytest.raises(InvalidInput, match="NUL"):
        engram.handoffs.begin("bad\x00text", LOCAL)
    with pytest.raises(InvalidInput, match="state must be one of"):
        engram.handoffs.list(LOCAL, states=["done"])
    with pytest.raises(NotFound, match="handoff 'hof_nope' does not exist"):
        engram.handoffs.accept("hof_nope", LOCAL)
    assert engram.handoffs.list(LOCAL, states=list(HandoffState)) == []


def test_settings_name_a_bad_mode_or_grace() -> None:
    assert handoff_config(None, None) == HandoffConfig()
    assert handoff_config("Offer", "2.5") == HandoffConfig(
        HandoffMode.OFFER, timedelta(minutes=2.5)
    )
    with pytest.raises(InvalidInput, match="ENGRAM_HANDOFF_MODE must be one of claim, offer"):
        handoff_config("grab", None)
    with pytest.raises(InvalidInput, match="ENGRAM_HANDOFF_LIVE_MINUTES must be a number"):
        handoff_config(None, "soon")


def test_the_mode_setting_reaches_the_service(tmp_path: Path) -> None:
    env = {"ENGRAM_EMBEDDER": "none", "ENGRAM_HANDOFF_MODE": "off"}
    with Engram.open(Settings.load(tmp_path, env=env)) as engram:
        assert engram.handoffs.config.mode is HandoffMode.OFF


# -- automatic handoffs and delivery -----------------------------------------------------------


def test_a_session_that_ends_hands_off_to_the_next_agent_in_the_same_directory(
    engram: Engram, clock: FakeClock
) -> None:
    sid = work(engram, clock, "c-1", "Fix the login bug")
    (h,) = engram.handoffs.list(LOCAL)
    assert h.automatic and h.source_session == sid and h.from_agent == "claude"
    assert h.cwd == CWD and "Fix the login bug" in h.summary
    assert "Ran: `make test` (failed)" in h.summary
    assert h.next_steps and "fix the fixture" in h.next_steps[0]
    # another directory of the same project: an automatic handoff stays where it was left
    assert "Handoff" not in start(engram, clock, "x-1", agent="codex", cwd="/work/other")
    block = start(engram, clock, "x-2", agent="codex")
    assert f"Handoff {h.id} from claude" in block and "Fix the login bug" in block
    assert "Next steps:\n- " in block
    taken = engram.handoffs.get(h.id, LOCAL)
    assert taken.state is HandoffState.ACCEPTED and taken.accepted_agent == "codex"
    assert taken.accepted_session is not None
    # claimed once: the next session start does not get it again
    assert f"Handoff {h.id}" not in start(engram, clock, "x-3", agent="gemini")


def test_a_session_starting_right_after_another_ended_gets_its_handoff(
    engram: Engram, clock: FakeClock
) -> None:
    """The ended session's summary has not been written yet (the summariser is behind): the
    session start writes it, and its handoff, before choosing what to deliver."""
    events = [
        ev("prompt", clock, "c-1", text="Tidy the settings page"),
        ev("stop", clock, "c-1", text="Done. Next step: add the dark mode toggle."),
        ev("session_end", clock, "c-1"),
    ]
    pending = engram.capture.prepare(events, LOCAL)
    engram.store.capture.add_observations(pending.touches, pending.observations)  # no summary
    assert engram.handoffs.list(LOCAL) == []
    block = start(engram, clock, "x-1", agent="codex")
    assert "Handoff hof_" in block and "Tidy the settings page" in block


def test_not_delivered_while_the_source_session_is_live(engram: Engram, clock: FakeClock) -> None:
    work(engram, clock, "c-1", "Refactor the router", end=False)
    (h,) = engram.handoffs.list(LOCAL)
    assert "Handoff" not in start(engram, clock, "x-1", agent="codex")
    clock.advance(minutes=11)  # past the grace: the source went quiet
    assert f"Handoff {h.id}" in start(engram, clock, "x-2", agent="codex")


def test_manual_beats_automatic_and_the_newest_automatic_expires_the_older(
    engram: Engram, clock: FakeClock
) -> None:
    work(engram, clock, "c-1", "First attempt at the cache")
    (older,) = engram.handoffs.list(LOCAL)
    clock.advance(minutes=1)
    work(engram, clock, "c-2", "Second attempt at the cache")
    newer = next(h for h in engram.handoffs.list(LOCAL) if h.id != older.id)
    assert engram.handoffs.get(older.id, LOCAL).state is HandoffState.EXPIRED
    manual = engram.handoffs.begin("Read this first", LOCAL, environment="webapp", cwd="/x")
    block = start(engram, clock, "x-1", agent="codex")
    assert f"Handoff {manual.id}" in block and newer.id not in block
    block = start(engram, clock, "x-2", agent="codex")
    assert f"Handoff {newer.id}" in block and "Second attempt" in block
    # the expired one is never delivered
    assert older.id not in start(engram, clock, "x-3", agent="codex")
    with pytest.raises(Conflict, match=f"handoff {older.id} is expired, not open"):
        engram.handoffs.accept(older.id, LOCAL)


def test_a_session_that_goes_on_after_its_handoff_expired_leaves_it_again(
    engram: Engram, clock: FakeClock
) -> None:
    """Walkthrough 35: a session still at work when a newer one in its directory ended had its
    handoff expired by that one's, and its later work never reached anyone (its handoff stayed
    expired with the old text). The work it does next leaves the handoff again, as of now."""
    work(engram, clock, "live", "Add retries to the payment client", end=False)
    (first,) = engram.handoffs.list(LOCAL)
    clock.advance(minutes=1)
    work(engram, clock, "other", "Fix the docs build")
    assert engram.handoffs.get(first.id, LOCAL).state is HandoffState.EXPIRED
    clock.advance(minutes=1)
    more = [
        ev("prompt", clock, "live", text="Now make the retry count configurable"),
        ev("stop", clock, "live", text="Done. Next step: document RETRIES."),
        ev("session_end", clock, "live"),
    ]
    engram.capture.ingest(more, LOCAL)
    assert engram.capture.drain()
    again = engram.handoffs.get(first.id, LOCAL)
    assert again.state is HandoffState.OPEN and "document RETRIES" in " ".join(again.next_steps)
    assert again.created_at > first.created_at
    block = start(engram, clock, "next", agent="codex")
    assert f"Handoff {first.id}" in block
    # taken now: the session's next event leaves it with whoever took it
    engram.capture.ingest([ev("session_end", clock, "live")], LOCAL)
    assert engram.capture.drain()
    assert engram.handoffs.get(first.id, LOCAL).state is HandoffState.ACCEPTED


def test_expired_and_cancelled_handoffs_are_never_delivered(
    engram: Engram, clock: FakeClock
) -> None:
    engram.environments.create("webapp", LOCAL)
    cancelled = engram.handoffs.begin("Changed my mind", LOCAL, environment="webapp")
    assert engram.handoffs.cancel(cancelled.id, LOCAL).state is HandoffState.CANCELLED
    stale = engram.handoffs.begin("Too old to matter", LOCAL, environment="webapp")
    clock.advance(seconds=TTL.total_seconds() + 60)
    for i in range(3):
        block = start(engram, clock, f"x-{i}", agent="codex")
        assert cancelled.id not in block and stale.id not in block
    assert engram.handoffs.get(stale.id, LOCAL).state is HandoffState.EXPIRED
    with pytest.raises(Conflict, match="is cancelled, not open"):
        engram.handoffs.accept(cancelled.id, LOCAL)


def test_a_session_that_did_no_work_gives_its_handoff_back(
    engram: Engram, clock: FakeClock
) -> None:
    work(engram, clock, "c-1", "Wire the payments webhook")
    (h,) = engram.handoffs.list(LOCAL)
    assert h.id in start(engram, clock, "empty", agent="codex")
    assert engram.handoffs.get(h.id, LOCAL).state is HandoffState.ACCEPTED
    # a session starting beside it (whose brief summarises the others) takes nothing from it
    start(engram, clock, "beside", agent="gemini")
    assert engram.handoffs.get(h.id, LOCAL).state is HandoffState.ACCEPTED
    # the receiving session ends without a prompt or a tool call
    engram.capture.ingest([ev("session_end", clock, "empty", agent="codex")], LOCAL)
    assert engram.capture.drain()
    back = engram.handoffs.get(h.id, LOCAL)
    assert back.state is HandoffState.OPEN and back.accepted_by is None
    # ... and the next session gets it; one that works keeps it
    assert h.id in start(engram, clock, "busy", agent="gemini")
    work(engram, clock, "busy", "Carry on with the webhook", agent="gemini")
    assert engram.handoffs.get(h.id, LOCAL).state is HandoffState.ACCEPTED


def test_offer_mode_injects_only_id_agent_and_age(engram: Engram, clock: FakeClock) -> None:
    engram.handoffs.config = replace(engram.handoffs.config, mode=HandoffMode.OFFER)
    work(engram, clock, "c-1", "Migrate the billing tables")
    (h,) = engram.handoffs.list(LOCAL)
    block = start(engram, clock, "x-1", agent="codex")
    assert f"- {h.id} from claude, " in block and "handoff_accept" in block
    handoff_part = block.split("Handoffs waiting for you", 1)[1].split("\n\n", 1)[0]
    assert "billing" not in handoff_part and "make test" not in handoff_part
    assert engram.handoffs.get(h.id, LOCAL).state is HandoffState.OPEN  # offered, not claimed
    assert engram.handoffs.accept(h.id, LOCAL, agent="codex").state is HandoffState.ACCEPTED
    # off: nothing is delivered, though handoffs are still made
    engram.handoffs.config = replace(engram.handoffs.config, mode=HandoffMode.OFF)
    work(engram, clock, "c-2", "Migrate the invoices too")
    (waiting,) = engram.handoffs.list(LOCAL)
    assert waiting.id not in start(engram, clock, "x-2", agent="codex")
    assert engram.handoffs.get(waiting.id, LOCAL).state is HandoffState.OPEN


def test_secrets_never_reach_a_handoff(engram: Engram, clock: FakeClock) -> None:
    h = engram.handoffs.begin(
        f"deploy with {RESULT_SECRET}",
        LOCAL,
        next_steps=[f"rotate {PROMPT_SECRET}"],
        files_touched=["src/a.py"],
    )
    assert "[REDACTED:" in h.summary and "[REDACTED:" in h.next_steps[0]
    work(engram, clock, "c-1", f"My key is {PROMPT_SECRET}")
    auto = next(x for x in engram.handoffs.list(LOCAL) if x.automatic)
    assert PROMPT_SECRET not in auto.model_dump_json()
    assert RESULT_SECRET.encode() not in stored_bytes(engram.store)
    assert PROMPT_SECRET.encode() not in stored_bytes(engram.store)


def test_for_agent_is_delivered_to_that_agent_only(engram: Engram, clock: FakeClock) -> None:
    engram.environments.create("webapp", LOCAL)
    h = engram.handoffs.begin("For Gemini", LOCAL, environment="webapp", for_agent="gemini")
    assert h.id not in start(engram, clock, "x-1", agent="codex")
    assert h.id in start(engram, clock, "x-2", agent="gemini")


def test_the_agent_a_handoff_is_for_is_named_in_any_case(engram: Engram, clock: FakeClock) -> None:
    """The README's table spells it "Codex"; the hooks say "codex": it was never delivered."""
    engram.environments.create("webapp", LOCAL)
    h = engram.handoffs.begin("For Codex", LOCAL, environment="webapp", for_agent="Codex")
    assert h.for_agent == "codex"
    assert h.id in start(engram, clock, "x-3", agent="codex")


# -- ownership -----------------------------------------------------------------------------------


def test_another_user_cannot_list_read_or_claim_unless_addressed(
    engram: Engram, clock: FakeClock
) -> None:
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    env = engram.environments.create("shared", alice)
    engram.environments.share(env.id, bob.user_id, Role.WRITER, alice)
    private = engram.handoffs.begin("Alice's own", alice, environment=env.id)
    addressed = engram.handoffs.begin("For Bob", alice, environment=env.id, for_user="bob")
    assert {h.id for h in engram.handoffs.list(alice)} == {private.id, addressed.id}
    assert [h.id for h in engram.handoffs.list(bob)] == [addressed.id]
    with pytest.raises(NotFound):
        engram.handoffs.get(private.id, bob)
    with pytest.raises(NotFound):
        engram.handoffs.accept(private.id, bob)
    with pytest.raises(NotFound):
        engram.handoffs.cancel(private.id, bob)
    with pytest.raises(PermissionDenied, match="only its owner may cancel"):
        engram.handoffs.cancel(addressed.id, bob)
    # Bob's session start in the shared project gets only what is addressed to him
    block = start(engram, clock, "b-1", actor=bob, agent="codex", project=env.id)
    assert addressed.id in block and private.id not in block
    assert engram.handoffs.get(private.id, alice).state is HandoffState.OPEN
    # and an automatic handoff from Bob's session is Bob's, not the project owner's
    work(engram, clock, "b-2", "Bob's work", actor=bob, project=env.id)
    (auto,) = [h for h in engram.handoffs.list(bob) if h.automatic]
    assert auto.owner == bob.user_id
    assert auto.id not in {h.id for h in engram.handoffs.list(alice)}


def test_a_handoff_left_for_a_teammate_is_theirs_alone(engram: Engram, clock: FakeClock) -> None:
    """Walkthrough 34: Alice's own next session in the project took the handoff she left for
    Bob ('accepted for this session', by her), so Bob never got it; Bob kept listing,
    reading and accepting handoffs of a project after he was removed from it; and a handoff
    could be left for someone who cannot open the project."""
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    engram.accounts.create_user("carol", LOCAL)
    env = engram.environments.create("shop", alice)
    engram.environments.share(env.id, bob.user_id, Role.WRITER, alice)
    for_bob = engram.handoffs.begin("Roadmap for Bob", alice, environment=env.id, for_user="bob")
    block = start(engram, clock, "a-1", actor=alice, agent="claude", project=env.id)
    assert for_bob.id not in block
    with pytest.raises(PermissionDenied, match="is for bob: only they may accept it"):
        engram.handoffs.accept(for_bob.id, alice)
    with pytest.raises(InvalidInput, match="carol has no access to environment 'shop'"):
        engram.handoffs.begin("For Carol", alice, environment=env.id, for_user="carol")
    assert engram.handoffs.get(for_bob.id, alice).state is HandoffState.OPEN
    engram.environments.unshare(env.id, bob.user_id, alice)
    assert engram.handoffs.list(bob) == []
    with pytest.raises(NotFound):
        engram.handoffs.get(for_bob.id, bob)
    with pytest.raises(NotFound):
        engram.handoffs.accept(for_bob.id, bob)
    engram.environments.share(env.id, bob.user_id, Role.WRITER, alice)  # back in the team
    block = start(engram, clock, "b-1", actor=bob, agent="codex", project=env.id)
    assert for_bob.id in block


def test_handoffs_left_for_teammates_never_crowd_out_ones_own(
    engram: Engram, clock: FakeClock
) -> None:
    """A review of stop 34: session start read the 50 newest handoffs the user could see,
    then dropped those left for others, so 50 open ones Bob left for Alice hid the one she
    left for him."""
    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    env = engram.environments.create("webapp", bob)
    engram.environments.share(env.id, alice.user_id, Role.WRITER, bob)
    for_bob = engram.handoffs.begin(
        "Alice's work for Bob", alice, environment=env.id, for_user="bob"
    )
    for i in range(50):
        clock.advance(minutes=1)
        engram.handoffs.begin(f"for Alice {i}", bob, environment=env.id, for_user="alice")
    assert for_bob.id in start(engram, clock, "s-bob", actor=bob, agent="codex", project=env.id)
