"""One audited commit path: every mutation writes its audit entry in the same transaction as the
change, on both backends. The first test walks the mutations through the services and finds the
entry of each; the others make one side of a transaction fail and check that neither side was
written (an audit entry whose id is already taken fails the insert, so the change must go too;
a change that fails leaves no entry behind)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.accounts import AuditEntry, AuditQuery
from engram.errors import Conflict, NotFound
from engram.extraction.providers import ProviderConfig
from engram.ids import new_id
from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.models import Environment, MemoryFilter, Status
from engram.service.providers import open_providers
from engram.soul.model import SoulAction, SoulBlock, SoulBlockVersion
from engram.store.providers import ProviderRecord


def actions(engram: Engram) -> list[str]:
    return [e.action for e in engram.audit.query(AuditQuery(limit=1000), LOCAL)]


def test_every_mutation_is_audited(engram: Engram, tmp_path: Path) -> None:
    def step(action: str, run: Callable[[], object]) -> None:
        before = actions(engram)
        run()
        after = actions(engram)
        assert action in after[: len(after) - len(before)], (action, after[:3])

    engram.environments.ensure_default(LOCAL)
    step("environment.create", lambda: engram.environments.create("scratch", LOCAL))
    step("environment.delete", lambda: engram.environments.delete("scratch", LOCAL))

    step("user.create", lambda: engram.accounts.create_user("ann", LOCAL))
    ann = engram.accounts.list_users(LOCAL)[0]
    issued = engram.accounts.issue_key(LOCAL, "ci", user_id=ann.id)
    assert actions(engram)[0] == "key.create"
    step("key.revoke", lambda: engram.accounts.revoke_key(issued.key.id, LOCAL))

    step("soul.set_block", lambda: engram.soul.set_block("identity", LOCAL, "You are careful."))
    engram.soul.set_block("identity", LOCAL, "You are brief.")
    step("soul.restore_block", lambda: engram.soul.restore_block("identity", 1, LOCAL))
    snap = engram.soul.snapshot(LOCAL, label="before")
    assert actions(engram)[0] == "soul.snapshot"
    engram.soul.set_block("identity", LOCAL, "You are terse.")
    step("soul.restore_snapshot", lambda: engram.soul.restore_snapshot(snap.id, LOCAL))

    memory = engram.memories.add(NewMemory(content="a note to purge"), LOCAL)
    step("memory.purge", lambda: engram.memories.purge([memory.id], LOCAL))

    for accept, action in ((True, "review.accepted"), (False, "review.dismissed")):
        who = "Ann" if accept else "Dan"
        # one slot, not strong enough to supersede an important memory: queued
        engram.lifecycle.remember(
            NewMemory(content=f"{who} prefers light themes", importance=0.9), LOCAL
        )
        queued = engram.lifecycle.remember(NewMemory(content=f"{who} prefers dark themes"), LOCAL)
        assert queued.review_id, queued
        review_id = queued.review_id or ""
        step(action, lambda: engram.lifecycle.resolve_review(review_id, LOCAL, accept=accept))  # noqa: B023

    providers = open_providers(engram.store, tmp_path / "keys", engram.clock)
    config = ProviderConfig(name="local", kind="openai", model="m")
    step("provider.add", lambda: providers.add(config, LOCAL))
    step("provider.remove", lambda: providers.remove("local", LOCAL))
    entry = engram.audit.query(AuditQuery(action="provider."), LOCAL)[0]
    assert entry.targets == ["provider:local"] and entry.user_id == LOCAL.user_id


def taken(engram: Engram) -> list[AuditEntry]:
    """An audit entry whose id is already in the log: appending it again fails."""
    entry = engram.audit.entry(LOCAL, "test.taken")
    engram.store.audit.append([entry])
    return [engram.audit.entry(LOCAL, "test.again").model_copy(update={"id": entry.id})]


def test_a_failing_audit_insert_rolls_back_the_change(engram: Engram) -> None:
    store = engram.store
    now = datetime.now(UTC)
    home = engram.environments.ensure_default(LOCAL)

    env = Environment(id=new_id("env_"), name="never", owner=LOCAL.user_id, created_at=now)
    with pytest.raises(Conflict):
        store.create_environment(env, taken(engram))
    assert store.get_environment(env.id) is None

    scratch = engram.environments.create("scratch", LOCAL)
    with pytest.raises(Conflict):
        store.delete_environment(scratch.id, taken(engram))
    assert store.get_environment(scratch.id) is not None

    memory = engram.memories.add(NewMemory(content="kept"), LOCAL)
    with pytest.raises(Conflict):
        store.purge([memory.id], taken(engram))
    assert [m.id for m in store.get([memory.id])] == [memory.id]

    block = engram.soul.set_block("identity", LOCAL, "You are careful.")
    with pytest.raises(Conflict):
        changed = block.model_copy(update={"text": "You are loud.", "version": 2})
        store.soul.write(LOCAL.user_id, [_version(changed)], None, taken(engram))
    assert [b.text for b in store.soul.blocks(LOCAL.user_id, [None])] == ["You are careful."]

    item = ReviewItem(
        id=new_id("rev_"),
        environment_id=home.id,
        memory_id=memory.id,
        other_id=memory.id,
        reason="test",
        similarity=0.5,
        created_at=now,
    )
    store.reviews.put_review(item)
    dismissed = item.model_copy(update={"status": ReviewStatus.DISMISSED})
    with pytest.raises(Conflict):
        store.reviews.put_review(dismissed, taken(engram))
    assert store.reviews.get_review(item.id) == item

    record = ProviderRecord("p", "openai", "", "m", None, 5.0, now)
    with pytest.raises(Conflict):
        store.providers.put_provider(record, taken(engram))
    assert store.providers.get_provider("p") is None
    store.providers.put_provider(record)
    with pytest.raises(Conflict):
        store.providers.delete_provider("p", taken(engram))
    assert store.providers.get_provider("p") is not None

    assert "test.again" not in actions(engram)


def _version(block: SoulBlock) -> SoulBlockVersion:
    return SoulBlockVersion(action=SoulAction.UPDATE, reason="", state=block)


def test_a_failing_change_writes_no_audit_entry(engram: Engram, tmp_path: Path) -> None:
    providers = open_providers(engram.store, tmp_path / "keys", engram.clock)
    with pytest.raises(NotFound, match="not configured"):
        providers.remove("missing", LOCAL)

    block = engram.soul.set_block("identity", LOCAL, "You are careful.")
    stale = block.model_copy(update={"text": "You are loud."})  # same version: a conflict
    entry = engram.audit.entry(LOCAL, "test.stale")
    with pytest.raises(Conflict):
        engram.store.soul.write(LOCAL.user_id, [_version(stale)], None, [entry])

    engram.environments.ensure_default(LOCAL)
    with pytest.raises(Conflict):
        engram.environments.create("default", LOCAL)

    held = engram.memories.add(NewMemory(content="held"), LOCAL)
    engram.environments.create("full", LOCAL)
    engram.memories.add(NewMemory(content="inside"), LOCAL, "full")
    with pytest.raises(Conflict):
        engram.environments.delete("full", LOCAL)

    found = actions(engram)
    assert "provider.remove" not in found and "test.stale" not in found
    assert found.count("environment.create") == 2 and "environment.delete" not in found
    live = engram.store.list_memories(MemoryFilter(statuses=[Status.ACTIVE]), limit=10)
    assert held.id in {m.id for m in live}
