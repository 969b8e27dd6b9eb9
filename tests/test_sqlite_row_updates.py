"""A stored memory that changes is updated in place on SQLite with only the columns that
changed (an index over none of them is not rewritten), and reads back as the write returned it;
ids keep their layout."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NewMemory
from engram.ids import new_id
from engram.lifecycle import WriteAction, WriteOutcome
from engram.models import Memory, MemoryFilter, MemoryPatch
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock


def _updates(store: SQLiteStore, run: Callable[[], object]) -> list[str]:
    """The UPDATE statements of ``memories`` that ``run`` makes."""
    seen: list[str] = []
    store.db._writer.set_trace_callback(seen.append)
    try:
        run()
    finally:
        store.db._writer.set_trace_callback(None)
    return [s for s in seen if s.startswith("UPDATE memories SET")]


def _columns(update: str) -> set[str]:
    sets = update.removeprefix("UPDATE memories SET ").split(" WHERE ")[0]
    return {part.split(" = ")[0] for part in sets.split(", ")}


@pytest.fixture
def sqlite(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "engram.db")


def test_a_merge_target_is_updated_in_its_changed_columns_alone(
    sqlite: SQLiteStore, clock: FakeClock
) -> None:
    engram = Engram(sqlite, clock=clock)
    first = engram.lifecycle.remember(NewMemory(content="The team deploys with Ansible"), LOCAL)
    clock.advance(seconds=60)
    out: list[WriteOutcome] = []

    def again() -> None:
        new = NewMemory(content="The team deploys with Ansible", importance=0.9)
        out.append(engram.lifecycle.remember(new, LOCAL))

    updates = _updates(sqlite, again)
    merged = out[0]
    assert merged.action is WriteAction.MERGED and merged.absorbed_into == first.memory.id
    assert len(updates) == 1
    changed = _columns(updates[0])
    assert {"reinforcement_count", "version", "updated_at", "importance"} <= changed
    assert not changed & {"content", "environment_id", "layer", "status", "created_at", "id"}
    stored = sqlite.get([first.memory.id])[0]
    assert stored == merged.memory
    assert stored.reinforcement_count == 1 and stored.importance == 0.9


def test_an_edit_reads_back_whole_and_reaches_keyword_search(
    sqlite: SQLiteStore, clock: FakeClock
) -> None:
    engram = Engram(sqlite, clock=clock)
    m = engram.memories.add(NewMemory(content="A quokka lives on Rottnest"), LOCAL)
    patch = MemoryPatch(content="A wombat lives in Tasmania", tags=["animals"], pinned=True)
    edited: list[Memory] = []
    updates = _updates(sqlite, lambda: edited.append(engram.memories.update(m.id, patch, LOCAL)))
    assert len(updates) == 1
    assert {"content", "tags", "pinned", "content_hash"} <= _columns(updates[0])
    assert "category" not in _columns(updates[0])
    stored = sqlite.get([m.id])[0]
    assert stored.model_dump(exclude={"redactions"}) == edited[0].model_dump(exclude={"redactions"})
    env = engram.environments.ensure_default(LOCAL)
    flt = MemoryFilter(environment_ids=[env.id])
    assert [h.memory_id for h in sqlite.keyword_search("wombat", flt, limit=5)] == [m.id]
    assert sqlite.keyword_search("quokka", flt, limit=5) == []


def _reference_id(value: int) -> str:
    """The encoding as first written: 26 steps of 5 bits, most significant first."""
    alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
    chars = []
    for _ in range(26):
        chars.append(alphabet[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def test_ids_keep_their_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    import engram.ids as ids

    for ms, rand in [(0, b"\0" * 10), (1_764_000_000_000, b"\xff" * 10), (2**41, bytes(range(10)))]:
        monkeypatch.setattr(ids.time, "time", lambda ms=ms: ms / 1000)
        monkeypatch.setattr(ids.os, "urandom", lambda n, rand=rand: rand)
        value = (int(ms / 1000 * 1000) << 80) | int.from_bytes(rand, "big")
        assert ids.new_id("mem_") == "mem_" + _reference_id(value)
    monkeypatch.undo()
    made = [new_id("x_") for _ in range(200)]
    assert len(set(made)) == 200
    assert all(re.fullmatch(r"x_[0-9a-hjkmnp-tv-z]{26}", i) for i in made)
