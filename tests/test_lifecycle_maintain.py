"""Maintenance runs: sweeping dedup and contradiction, decay flagging with a fake clock,
compaction of cold episodes, dry runs, undo, and the CLI."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from engram import LOCAL, Engram, EpisodeDetails, MemoryFilter, NewMemory, Status
from engram.cli import main
from engram.cli.common import console
from engram.cli.maintain import _print_report as print_report
from engram.extraction.conversation import NewMessage
from engram.lifecycle import LifecycleConfig
from engram.lifecycle.compaction import pick_facts
from engram.lifecycle.decay import retention
from engram.models import Layer
from engram.store import Access
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock


def fact(text: str, importance: float = 0.5, pinned: bool = False) -> NewMemory:
    return NewMemory(content=text, importance=importance, pinned=pinned)


def status(engram: Engram, memory_id: str) -> Status:
    return engram.memories.get(memory_id, LOCAL).status


def versions(engram: Engram, ids: list[str]) -> list[int]:
    return [engram.memories.get(i, LOCAL).version for i in ids]


# -- decay ---------------------------------------------------------------------------------
def test_decay_flags_after_120_idle_days_and_never_deletes(
    engram: Engram, clock: FakeClock
) -> None:
    low = engram.memories.add(fact("Saw a blue car once", importance=0.05), LOCAL)
    edge = engram.memories.add(fact("Lunch was soup on a Tuesday", importance=0.1), LOCAL)
    pinned = engram.memories.add(fact("Wifi password hint", importance=0.01, pinned=True), LOCAL)
    read = engram.memories.add(fact("Parking spot is B12", importance=0.05), LOCAL)

    clock.advance(days=119)
    assert engram.lifecycle.maintain(LOCAL).flagged == []
    engram.store.record_access([Access(read.id, 1, clock())])  # a read is a touch
    clock.advance(days=1, minutes=1)
    report = engram.lifecycle.maintain(LOCAL)
    assert [e.memory_id for e in report.flagged] == [low.id]
    assert "120 days" in report.flagged[0].reason
    # a relative time comes with its date (walkthrough 32)
    assert f"120 days (since {low.updated_at.date().isoformat()};" in report.flagged[0].reason
    assert status(engram, low.id) is Status.FLAGGED
    for kept in (edge, pinned, read):  # importance 0.1 is not < 0.1; pinned; read recently
        assert status(engram, kept.id) is Status.ACTIVE
    history = engram.memories.history(low.id, LOCAL)
    assert history[-1].action.value == "flag" and "nothing deleted" in history[-1].reason

    # undo with plain restore
    assert engram.memories.restore(low.id, LOCAL).status is Status.ACTIVE


def test_retention_has_a_half_life_per_layer(engram: Engram, clock: FakeClock) -> None:
    cfg = LifecycleConfig()
    f = engram.memories.add(NewMemory(content="A fact", importance=0.8), LOCAL)
    e = engram.memories.add(
        NewMemory(layer=Layer.EPISODE, content="A session", importance=0.8), LOCAL
    )
    assert retention(f, clock(), cfg) == pytest.approx(0.8, abs=1e-3)
    clock.advance(days=30)
    now = clock()
    assert retention(e, now, cfg) == pytest.approx(0.4, abs=1e-3)  # one 30-day half-life
    assert retention(f, now, cfg) == pytest.approx(0.8 * 0.5 ** (30 / 180), abs=1e-3)
    custom = LifecycleConfig(half_life_days={Layer.EPISODE: 60.0})
    assert retention(e, now, custom) == pytest.approx(0.8 * 0.5**0.5, abs=1e-3)
    assert retention(e.model_copy(update={"pinned": True}), now, cfg) == 1.0


# -- compaction ----------------------------------------------------------------------------
SUMMARY = (
    "We looked at the flaky upload tests for a while. "
    "We decided to retry uploads 3 times with exponential backoff. "
    "Alice will own the storage migration before March 15. "
    "Is the CDN cache part of the problem? "
    "Lunch was nice."
)


def test_cold_episode_is_compacted_into_facts_and_undone(engram: Engram, clock: FakeClock) -> None:
    existing = engram.memories.add(fact("Uploads go through the signed URL service"), LOCAL)
    ep = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content=SUMMARY,
            importance=0.4,
            episode=EpisodeDetails(key_decisions=["Uploads go through the signed URL service"]),
        ),
        LOCAL,
    )
    clock.advance(days=20)  # idle, but not yet cold
    assert engram.lifecycle.maintain(LOCAL).compacted == []
    clock.advance(days=40)
    report = engram.lifecycle.maintain(LOCAL)
    assert [e.memory_id for e in report.compacted] == [ep.id]
    archived = engram.memories.get(ep.id, LOCAL)
    assert archived.status is Status.ARCHIVED
    linked = archived.metadata["compacted_into"]
    assert existing.id in linked  # the key decision was already known: reinforced
    assert engram.memories.get(existing.id, LOCAL).reinforcement_count == 1
    made = [m for m in engram.store.get(linked) if m.id != existing.id]
    contents = sorted(m.content for m in made)
    assert contents == sorted(
        [
            "We decided to retry uploads 3 times with exponential backoff.",
            "Alice will own the storage migration before March 15.",
        ]
    )
    assert all(
        m.metadata["compacted_from"] == ep.id and m.source.value == "consolidated" for m in made
    )

    changed = engram.lifecycle.undo(ep.id, LOCAL)
    assert changed[0].id == ep.id and changed[0].status is Status.ACTIVE
    assert all(status(engram, m.id) is Status.DELETED for m in made)
    assert status(engram, existing.id) is Status.ACTIVE


def test_a_dry_run_of_compaction_names_no_fact_that_will_not_exist(
    engram: Engram,
    clock: FakeClock,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dry run lists the text of each fact compaction would make, not ids a real run never
    gives them; reinforced facts are listed apart, once each (walkthrough 32, finding 8)."""
    existing = engram.memories.add(fact("Uploads go through the signed URL service"), LOCAL)
    decision = "Uploads go through the signed URL service"
    ep = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content=SUMMARY,
            importance=0.4,
            episode=EpisodeDetails(key_decisions=[decision, decision + " (signed URLs)"]),
        ),
        LOCAL,
    )
    clock.advance(days=60)
    report = engram.lifecycle.maintain(LOCAL, dry_run=True)
    dry = report.compacted
    assert [e.memory_id for e in dry] == [ep.id]
    would = dry[0]
    assert would.created == [] and would.reinforced == [existing.id]
    assert sorted(would.new_facts) == sorted(
        [
            "We decided to retry uploads 3 times with exponential backoff.",
            "Alice will own the storage migration before March 15.",
        ]
    )
    assert "would" in would.reason
    since = ep.updated_at.date().isoformat()
    assert would.reason.startswith(f"cold episode (idle 60 days, since {since}; retention")
    monkeypatch.setattr(console, "width", 400)  # one table row a line
    print_report(report)  # what 'engram maintain --dry-run' prints
    shown = capsys.readouterr().out
    assert "would make 'Alice will own the storage" in shown
    assert f"{existing.id} (reinforced)" in shown
    assert "mem_" not in shown.replace(existing.id, "").replace(ep.id, "")  # no other id

    done = engram.lifecycle.maintain(LOCAL).compacted[0]
    assert done.reinforced == [existing.id] and existing.id not in done.created
    made = engram.store.get(done.created)
    assert sorted(m.content for m in made) == sorted(would.new_facts) == sorted(done.new_facts)
    assert all(m.metadata["compacted_from"] == ep.id for m in made)
    assert f"{len(made)} new facts, 1 reinforced" in done.reason


def test_history_delivered_today_is_not_idle(engram: Engram, clock: FakeClock) -> None:
    """An episode of a conversation said in 2023 and stored today keeps its own times (recency
    is about when it was said), but it was written today: the next sweep must not take it
    for a cold episode and archive it (it did: idle counted from the messages' times)."""
    said = clock.now - timedelta(days=900)
    ep = engram.memories.add(
        NewMemory(layer=Layer.EPISODE, content=SUMMARY, importance=0.4, created_at=said), LOCAL
    )
    assert ep.created_at == ep.updated_at == said
    assert ep.recorded_at is not None and abs((clock.now - ep.recorded_at).total_seconds()) < 1
    assert engram.lifecycle.maintain(LOCAL).compacted == []
    assert status(engram, ep.id) is Status.ACTIVE
    clock.advance(days=60)  # untouched since it was stored: now it may go cold
    assert [e.memory_id for e in engram.lifecycle.maintain(LOCAL).compacted] == [ep.id]


def test_compaction_of_an_extracted_episode_keeps_clean_sentences(engram: Engram) -> None:
    """The episode extraction writes is "Speaker: sentence ..."; a sentence said without a
    final stop read on into the next speaker's ("push the tag Caroline: Always run ..."), and
    the label stayed in the fact compaction made of it."""
    said = [
        NewMessage(role="user", author="Caroline", content="To release we bump and push the tag"),
        NewMessage(role="assistant", content="Got it, that is the release process."),
        NewMessage(role="user", author="Caroline", content="Always run the tests before pushing"),
    ]
    engram.extraction.extract(said, LOCAL)
    flt = MemoryFilter(layers=[Layer.EPISODE], categories=["episode"])  # not the messages
    [episode] = engram.memories.list_memories(LOCAL, flt).items
    picked = [p.content for p in pick_facts(episode, LifecycleConfig())]
    assert "Always run the tests before pushing." in picked, picked
    assert not any("Caroline:" in p or "tag Always" in p for p in picked), picked


# -- sweep, dry run ------------------------------------------------------------------------
def test_dry_run_changes_nothing_then_the_run_does_the_same(
    engram: Engram, clock: FakeClock
) -> None:
    # stored without the lifecycle, so only maintenance sees them
    a = engram.memories.add(fact("Deploys go through staging first"), LOCAL)
    b = engram.memories.add(fact("Deploys go through staging first, always"), LOCAL)
    c = engram.memories.add(fact("The staging database is postgres 15"), LOCAL)
    d = engram.memories.add(fact("The staging database is postgres 16"), LOCAL)
    e = engram.memories.add(fact("Saw a red bird", importance=0.01), LOCAL)
    clock.advance(days=200)
    ids = [a.id, b.id, c.id, d.id, e.id]
    before = versions(engram, ids)
    dry = engram.lifecycle.maintain(LOCAL, dry_run=True)
    assert dry.dry_run
    assert versions(engram, ids) == before
    assert engram.lifecycle.reviews(LOCAL) == []

    real = engram.lifecycle.maintain(LOCAL)
    for report in (dry, real):
        assert [(x.memory_id, x.other_id) for x in report.merged] == [(b.id, a.id)]
        assert [(x.memory_id, x.other_id) for x in report.superseded] == [(c.id, d.id)]
        assert [x.memory_id for x in report.flagged] == [e.id]
    assert [status(engram, i) for i in ids] == [
        Status.ACTIVE,
        Status.MERGED,
        Status.SUPERSEDED,
        Status.ACTIVE,
        Status.FLAGGED,
    ]
    # nothing left to do
    again = engram.lifecycle.maintain(LOCAL)
    assert again.changes == 0
    # undo of the sweep's supersede
    engram.lifecycle.undo(c.id, LOCAL)
    assert status(engram, c.id) is Status.ACTIVE
    flt = MemoryFilter(statuses=[Status.ACTIVE])
    assert engram.memories.list_memories(LOCAL, flt).total == 3


def test_maintain_with_a_custom_config(store: SQLiteStore, clock: FakeClock) -> None:
    strict = Engram(store, clock=clock, lifecycle=LifecycleConfig(dedup_jaccard=0.9))
    strict.memories.add(fact("Deploys go through staging first"), LOCAL)
    strict.memories.add(fact("Deploys go through staging first, always"), LOCAL)
    assert strict.lifecycle.maintain(LOCAL).merged == []


# -- CLI -----------------------------------------------------------------------------------
def test_cli_maintain_review_and_undo(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    home = ["--home", str(tmp_path / "h")]

    def run(*argv: str) -> tuple[int, str]:
        code = main([*home, *argv])
        out, err = capsys.readouterr()
        return code, out + err

    assert run("init")[0] == 0
    for args in (
        ("User prefers tea in the morning", "--importance", "0.9"),
        ("User prefers coffee in the morning",),  # a conflict too weak for the important one
        ("Uses pnpm daily",),
        ("Uses pnpm daily, really",),
    ):
        # --exact: stored as given, so that the maintenance run finds the pairs
        assert run("add", *args, "--exact")[0] == 0
    code, out = run("maintain", "--dry-run", "--json")
    assert code == 0
    report = json.loads(out)
    assert report["dry_run"] and len(report["merged"]) == 1 and len(report["queued"]) == 1
    code, out = run("maintain")
    assert code == 0 and "1 merged" in out and "1 queued" in out
    code, out = run("review", "list", "--json")
    items = json.loads(out)
    assert len(items) == 1
    code, out = run("review", "accept", items[0]["id"])
    assert code == 0 and "supersedes" in out
    code, out = run("undo", items[0]["other_id"])
    assert code == 0 and "active" in out
    code, out = run("undo", "mem_nope")
    assert code == 3 and out.startswith("error:")
    code, out = run("review", "dismiss", items[0]["id"])
    assert code != 0 and "already accepted" in out
