"""Supersede only what a new fact replaces: the same subject *and* the same slot (issue 16).

The Caroline case through the real CLI (``engram extract`` on a 5-message chat, a real SQLite
home), then the rules behind it: claims per clause, the importance guard, the review queue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.cli import main
from engram.lifecycle import WriteAction
from engram.lifecycle.claims import claims
from engram.lifecycle.contradiction import Strength, Verdict, check, restates
from engram.models import Status
from engram.store import Access
from engram.store.reviews import ReviewStatus
from tests.conftest import FakeClock

CHAT = {
    "conversation": {"title": "intro"},
    "messages": [
        {
            "role": "user",
            "author": "Caroline",
            "content": "I'm allergic to peanuts and I prefer vim over emacs.",
        },
        {"role": "assistant", "content": "Noted: no peanuts, and vim it is."},
        {
            "role": "user",
            "author": "Caroline",
            "content": "We decided to use Postgres as the database for the garden app.",
        },
        {"role": "assistant", "content": "Postgres for the garden app, got it."},
        {"role": "user", "author": "Caroline", "content": "I moved to Lisbon last month."},
    ],
}
ALLERGY_AND_VIM = "Caroline is allergic to peanuts and Caroline prefers vim over emacs."
LISBON = "Caroline moved to Lisbon last month."
DECISION = "Caroline and others decided to use Postgres as the database for the garden app."


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_caroline_moving_hides_neither_her_allergy_nor_a_decision(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = ["--home", str(tmp_path / "h")]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    assert cli(capsys, *home, "init")[0] == 0
    code, out = cli(capsys, *home, "extract", str(chat), "--json")
    assert code == 0, out
    result = json.loads(out)
    actions = {
        p["content"]: o["action"]
        for p, o in zip(result["proposals"], result["outcomes"], strict=True)
    }
    # the bundled sentence became two facts, and nothing was superseded
    assert "Caroline is allergic to peanuts." in actions
    assert "Caroline prefers vim over emacs." in actions
    assert actions[LISBON] == "created"
    assert "superseded" not in actions.values()

    code, out = cli(capsys, *home, "list", "--json", "--layer", "fact")
    active = {m["content"]: m for m in json.loads(out)["items"]}
    assert active["Caroline is allergic to peanuts."]["importance"] == pytest.approx(0.9)
    assert {"Caroline prefers vim over emacs.", LISBON} <= set(active)
    assert all(m["status"] == "active" for m in active.values())

    code, out = cli(capsys, *home, "context", "is Caroline allergic to anything")
    assert code == 0 and "allergic to peanuts" in out

    code, out = cli(capsys, *home, "maintain", "--json")
    report = json.loads(out)
    assert report["superseded"] == [] and report["merged"] == [], report
    code, out = cli(capsys, *home, "list", "--json", "--layer", "fact")
    assert len(json.loads(out)["items"]) == len(active)


def test_a_bundled_fact_is_not_retired_by_a_fact_about_another_slot(engram: Engram) -> None:
    old = engram.lifecycle.remember(NewMemory(content=ALLERGY_AND_VIM, importance=0.9), LOCAL)
    decision = engram.lifecycle.remember(NewMemory(content=DECISION, importance=0.75), LOCAL)
    moved = engram.lifecycle.remember(NewMemory(content=LISBON), LOCAL)
    assert moved.action is WriteAction.CREATED, moved.reason
    report = engram.lifecycle.maintain(LOCAL)
    assert report.superseded == [] and report.merged == [] and report.queued == []
    for m in (old.memory, decision.memory):
        assert engram.memories.get(m.id, LOCAL).status is Status.ACTIVE
    # updating one claim of the bundle does not retire the other one: it goes to review
    update = engram.lifecycle.remember(NewMemory(content="Caroline now uses emacs"), LOCAL)
    assert update.action is WriteAction.QUEUED, update.reason
    assert "other claim" in update.reason
    assert engram.memories.get(old.memory.id, LOCAL).status is Status.ACTIVE
    [item] = engram.lifecycle.reviews(LOCAL)
    assert "editor" in item.reason


def test_the_same_slot_supersedes_even_without_shared_wording(engram: Engram) -> None:
    old = engram.lifecycle.remember(NewMemory(content="Caroline lives in Porto"), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content=LISBON), LOCAL)
    assert out.action is WriteAction.SUPERSEDED and out.superseded == old.memory.id
    assert "location" in out.reason


def test_a_fact_restated_in_other_words_merges_into_the_slot_it_repeats(engram: Engram) -> None:
    moved = engram.lifecycle.remember(NewMemory(content=LISBON), LOCAL)
    job = engram.lifecycle.remember(
        NewMemory(content="Mateo Lindqvist started working at Stark this spring."), LOCAL
    )
    # few shared words (below the dedup threshold), but the same slot with the same value
    for text, target in (
        ("As noted, Caroline lives in Lisbon.", moved),
        ("Mateo Lindqvist works at Stark, actually.", job),
    ):
        out = engram.lifecycle.remember(NewMemory(content=text), LOCAL)
        assert out.action is WriteAction.MERGED, (text, out.reason)
        assert out.absorbed_into == target.memory.id and "restates it" in out.reason
    # a new detail, another subject or a clause that is no claim: not merged
    for text in (
        "Mateo Lindqvist works at Stark in Berlin.",
        "Mateo Brennan works at Stark.",
        "Caroline lives in Lisbon and the weather there is lovely.",
    ):
        out = engram.lifecycle.remember(NewMemory(content=text), LOCAL)
        assert out.action is not WriteAction.MERGED, (text, out.reason)
    assert engram.memories.get(moved.memory.id, LOCAL).status is Status.ACTIVE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # negated after the verb, on either side
        ("Bob drinks alcohol at dinner parties with friends", "Bob drinks no alcohol"),
        ("Bob eats no meat", "Bob eats meat and fish at home"),
        ("Bob drinks coffee without sugar every morning", "Bob drinks coffee with sugar"),
        ("Alice lives in Paris with her husband", "Alice lives in Paris no more"),
        # a change away from the value
        ("Sven stopped using zed", "Sven uses zed"),
        ("Sven switched from zed to helix", "Sven's code editor is zed"),
        # a plan, a wish or the past against a present fact
        ("Alice plans to live in Paris with her husband next spring", "Alice lives in Paris"),
        ("Alice wants to work at Google", "Alice works at Google"),
        ("Alice works at Google as a senior engineer", "Alice wants to work at Google"),
        ("Alice worked at Google until she quit to join a startup", "Alice works at Google"),
        ("Alice lived in Paris during her twenties", "Alice lives in Paris"),
        # no named subject: another person's fact, as far as the words tell
        ("She works at Google as a senior engineer", "He works at Google"),
    ],
)
def test_a_contradiction_or_a_plan_is_no_restatement(old: str, new: str) -> None:
    assert not restates(old, new), (claims(old), claims(new))


def test_a_restatement_does_not_keep_a_lower_ranked_contradiction_active(engram: Engram) -> None:
    paris = "Alice lives in Paris with her husband Marc and their dogs and cats in a small flat"
    engram.lifecycle.remember(NewMemory(content=paris), LOCAL)
    # both active (stored as given): the new fact restates one and contradicts the other
    exact = NewMemory(content="Alice lives in Berlin", lifecycle=False)
    berlin = engram.lifecycle.remember(exact, LOCAL)
    out = engram.lifecycle.remember(
        NewMemory(content="Alice lives in Paris with her husband Marc"), LOCAL
    )
    assert out.action is WriteAction.SUPERSEDED and out.superseded == berlin.memory.id


def test_a_merged_contradiction_never_hides_an_important_fact(engram: Engram) -> None:
    engram.lifecycle.remember(
        NewMemory(content="Bob drinks alcohol at dinner parties with friends on weekends"), LOCAL
    )
    out = engram.lifecycle.remember(
        NewMemory(content="Bob drinks no alcohol", importance=0.95), LOCAL
    )
    assert out.action is not WriteAction.MERGED, out.reason
    assert engram.memories.get(out.memory.id, LOCAL).status is Status.ACTIVE


def test_important_and_pinned_memories_need_a_strong_match(engram: Engram) -> None:
    tea = engram.lifecycle.remember(NewMemory(content="Prefers tea", importance=0.9), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content="Prefers coffee"), LOCAL)
    assert out.action is WriteAction.QUEUED  # a bare "prefers": not a named attribute
    assert engram.memories.get(tea.memory.id, LOCAL).status is Status.ACTIVE
    pinned = engram.lifecycle.remember(NewMemory(content="Dana prefers tabs", pinned=True), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content="Dana prefers spaces"), LOCAL)
    assert out.action is WriteAction.QUEUED
    assert engram.memories.get(pinned.memory.id, LOCAL).status is Status.ACTIVE
    # a strong match (same subject, a named attribute) still updates an important fact
    home = engram.lifecycle.remember(NewMemory(content="Dana lives in Oslo", importance=0.9), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content="Dana moved to Quito"), LOCAL)
    assert out.action is WriteAction.SUPERSEDED and out.superseded == home.memory.id


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        (
            "Lee uses postgres as the database",
            "Lee switched from postgres to mysql as the database",
            "Lee database",
        ),
        ("The user prefers pnpm over npm", "The user switched from pnpm to npm", "npm"),
        ("Caroline prefers vim over emacs.", "Caroline switched from vim to emacs.", "emacs"),
        ("Caroline uses vim as her editor", "Caroline switched from vim to emacs", "editor"),
        ("Caroline lives in Porto", "Caroline moved from Porto to Lisbon", "Caroline"),
        (
            "Caroline prefers vim over emacs.",
            "Caroline's editor is now emacs, Caroline switched from vim.",
            "editor",
        ),
    ],
)
def test_a_change_from_the_old_value_to_a_new_one_supersedes_never_merges(
    engram: Engram, old: str, new: str, query: str
) -> None:
    """ "switched from X to Y" names the old value first: it was read as a claim of X and
    merged into the fact it replaces (jaccard 0.5-0.6), so context kept the stale value."""
    first = engram.lifecycle.remember(NewMemory(content=old), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content=new), LOCAL)
    assert out.action is WriteAction.SUPERSEDED, out.reason
    assert out.superseded == first.memory.id
    context = engram.context.assemble(LOCAL, query).text
    assert new in context and old not in context


def test_a_change_away_from_a_value_takes_it_back() -> None:
    found = check("Caroline prefers vim over emacs.", "Caroline switched from vim.")
    assert (found.verdict, found.rule, found.strength) == (
        Verdict.CLEAR,
        "negation",
        Strength.STRONG,
    )


def test_a_facet_of_an_attribute_is_no_other_value_of_it(semantic_engram: Engram) -> None:
    """ "on port 5433" says where the database listens, not which database it is (the two
    share no word: the default model's cosine, 0.80, makes them candidates)."""
    engram = semantic_engram
    engram.lifecycle.remember(NewMemory(content="Our database is mysql"), LOCAL)
    out = engram.lifecycle.remember(NewMemory(content="The staging DB is on port 5433"), LOCAL)
    assert out.action is WriteAction.CREATED, out.reason
    assert engram.lifecycle.reviews(LOCAL) == []


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        (ALLERGY_AND_VIM, LISBON, Verdict.DISTINCT),
        (DECISION, LISBON, Verdict.DISTINCT),
        ("Caroline lives in Porto", LISBON, Verdict.CLEAR),
        ("Caroline is allergic to peanuts", "Caroline is allergic to shellfish", Verdict.DISTINCT),
        (
            "Caroline is allergic to peanuts",
            "Caroline is no longer allergic to peanuts",
            Verdict.CLEAR,
        ),
        ("Caroline has a dog named Rex", "Caroline now works at Acme as a nurse", Verdict.DISTINCT),
        ("Alice Abara's code editor is vim", "Vim is the code editor of Alice Abara", Verdict.NONE),
        ("Alice Abara's code editor is vim", "Alice Abara's login shell is zsh", Verdict.DISTINCT),
        ("Alice Abara's desk number is 104", "Alice Berg's desk number is 104", Verdict.DISTINCT),
        (
            "The home city of Alice Abara is Lisbon",
            "Alice Abara's home city is now Oslo",
            Verdict.CLEAR,
        ),
        (
            "Project atlas uses Postgres as its database",
            "Project atlas moved to MySQL",
            Verdict.CLEAR,
        ),
        ("Omar switched to a standing desk", "Omar now uses vim", Verdict.DISTINCT),
    ],
)
def test_claims_decide_the_verdict(old: str, new: str, verdict: Verdict) -> None:
    assert check(old, new).verdict is verdict, (claims(old), claims(new), check(old, new))


def test_a_bundled_fact_has_one_claim_per_clause() -> None:
    got = claims(ALLERGY_AND_VIM)
    assert [c.attribute for c in got] == ["allergy", "editor"]
    assert all(c.subject == {"caroline"} for c in got)
    # "and" inside a subject does not split
    assert [c.attribute for c in claims("Alice and Bob live in Rome")] == ["location"]
    # a clause without a subject takes the one before
    assert claims("Sam lives in Rome and works at Acme")[1].subject == {"sam"}
    assert check("Dana lives in Oslo", "Dana moved to Quito").strength is Strength.STRONG


def test_review_items_close_when_their_memories_change(engram: Engram) -> None:
    tea = engram.lifecycle.remember(NewMemory(content="Prefers tea", importance=0.9), LOCAL)
    q = engram.lifecycle.remember(NewMemory(content="Prefers coffee"), LOCAL)
    assert q.action is WriteAction.QUEUED
    engram.memories.delete(tea.memory.id, LOCAL)
    assert engram.lifecycle.reviews(LOCAL) == []  # nothing left to decide: closed
    [item] = engram.lifecycle.reviews(LOCAL, status=None)
    assert item.status is ReviewStatus.CLOSED and "deleted" in item.reason


# -- decay retires only noise ------------------------------------------------------------
def test_decay_never_flags_a_memory_that_was_used(engram: Engram, clock: FakeClock) -> None:
    noise = engram.memories.add(NewMemory(content="Saw a blue car once", importance=0.05), LOCAL)
    used = engram.memories.add(NewMemory(content="Gate code is 4411", importance=0.05), LOCAL)
    for _ in range(3):  # read three times, long ago
        engram.store.record_access([Access(used.id, 1, clock())])
    clock.advance(days=400)
    report = engram.lifecycle.maintain(LOCAL)
    assert [e.memory_id for e in report.flagged] == [noise.id]
    why = report.flagged[0].reason
    assert "never read" in why and "0 reads" in why and "importance 0.05" in why
    assert engram.memories.get(used.id, LOCAL).status is Status.ACTIVE


def test_a_fact_said_before_the_one_it_contradicts_never_retires_it(engram: Engram) -> None:
    """A late delivery (an older session extracted last, an older export imported after a
    newer one) said 'Jo lives in Berlin' on 1 November; 'Jo lives in Lisbon' was said on 21
    November and is stored. Before, the older statement superseded the newer one and context
    answered Berlin. Now it is stored as history (outdated, superseded by the newer fact),
    which stays active; a newer one still supersedes."""
    from datetime import UTC, datetime

    newer = engram.lifecycle.remember(
        NewMemory(content="Jo lives in Lisbon", created_at=datetime(2026, 11, 21, tzinfo=UTC)),
        LOCAL,
    )
    older = engram.lifecycle.remember(
        NewMemory(content="Jo lives in Berlin", created_at=datetime(2026, 11, 1, tzinfo=UTC)),
        LOCAL,
    )
    assert older.action is WriteAction.OUTDATED
    assert older.memory.status is Status.SUPERSEDED
    assert older.memory.superseded_by == newer.memory.id
    assert f"said before {newer.memory.id}" in older.reason
    (kept,) = engram.store.get([newer.memory.id])
    assert kept.status is Status.ACTIVE and kept.superseded_by is None
    history = engram.memories.history(older.memory.id, LOCAL)
    assert [v.action.value for v in history] == ["create"]
    latest = engram.lifecycle.remember(
        NewMemory(content="Jo lives in Porto", created_at=datetime(2026, 11, 30, tzinfo=UTC)),
        LOCAL,
    )
    assert latest.action is WriteAction.SUPERSEDED and latest.superseded == newer.memory.id


def test_only_a_time_the_caller_gave_can_make_a_fact_outdated(engram: Engram) -> None:
    """A review of stop 34: a naive created_at ('2026-11-01T10:00:00') crashed a contradicting
    write (500: naive against aware), and a stored fact stamped in the future (a skewed
    clock) made every live correction 'outdated'. A naive time is UTC; a write without a
    time is said now and supersedes."""
    from datetime import UTC, datetime, timedelta

    engram.lifecycle.remember(
        NewMemory(content="Jo lives in Lisbon", created_at=datetime(2026, 11, 21, tzinfo=UTC)),
        LOCAL,
    )
    naive = NewMemory.model_validate(
        {"content": "Jo lives in Berlin", "created_at": "2026-11-01T10:00:00"}
    )
    assert naive.created_at == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert engram.lifecycle.remember(naive, LOCAL).action is WriteAction.OUTDATED
    ahead = datetime.now(UTC) + timedelta(days=400)
    engram.lifecycle.remember(NewMemory(content="Ana lives in Oslo", created_at=ahead), LOCAL)
    live = engram.lifecycle.remember(NewMemory(content="Ana lives in Bergen"), LOCAL)
    assert live.action is WriteAction.SUPERSEDED


@pytest.mark.parametrize(
    "old",
    [
        "The user uses VS Code.",
        "The user uses VS Code for everything.",
        "The user's editor is VS Code.",
    ],
)
def test_switching_from_a_two_word_tool_supersedes_it(engram: Engram, old: str) -> None:
    """A review of stop 34: after 'I switched from VS Code to Neovim' the fact 'uses VS Code'
    stayed active ('vs' and 'code' read as two words, no editor among them)."""
    before = engram.lifecycle.remember(NewMemory(content=old), LOCAL)
    out = engram.lifecycle.remember(
        NewMemory(content="The user switched from VS Code to Neovim."), LOCAL
    )
    assert out.action is WriteAction.SUPERSEDED and out.superseded == before.memory.id
