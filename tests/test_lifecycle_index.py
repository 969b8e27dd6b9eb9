"""The lifecycle's candidate index on both backends: built from the facts' text only
(``Store.memory_texts``), never built by writes with nothing to look up, and never acting on a
fact that is gone (a purge moves the memory stamp, so the index forgets it)."""

from __future__ import annotations

from engram import LOCAL, Engram, NewMemory
from engram.lifecycle import WriteAction
from engram.models import Layer, MemoryFilter, MemoryPatch, Status
from engram.service.fact_index import WARM_LOOKUPS, FactIndexes
from engram.store import MemoryText

KEIKO = "Keiko keeps bees in her garden"


def _warm(engram: Engram) -> None:
    """Enough lifecycle writes that the write path's candidate index is built and used."""
    for i in range(WARM_LOOKUPS + 2):
        engram.lifecycle.remember(NewMemory(content=f"Warm fact number {i} about zebras"), LOCAL)


def test_memory_texts_reads_the_matching_memories_oldest_first(engram: Engram) -> None:
    first = engram.memories.add(NewMemory(content="Ana lives in Porto", importance=0.9), LOCAL)
    second = engram.memories.add(NewMemory(content="Ana prefers tea", pinned=True), LOCAL)
    gone = engram.memories.add(NewMemory(content="Ana owns a bike"), LOCAL)
    engram.memories.delete(gone.id, LOCAL)
    engram.memories.add(NewMemory(content="Ana went hiking", layer=Layer.EPISODE), LOCAL)
    env = engram.environments.resolve(None, LOCAL).id
    flt = MemoryFilter(environment_ids=[env], layers=[Layer.FACT], statuses=[Status.ACTIVE])
    assert engram.store.memory_texts(flt) == [
        MemoryText(first.id, "Ana lives in Porto", 0.9, False),
        MemoryText(second.id, "Ana prefers tea", second.importance, True),
    ]
    assert engram.store.memory_texts(MemoryFilter(environment_ids=["env_none"])) == []


def test_a_purged_fact_is_never_merged_into_nor_brought_back(engram: Engram) -> None:
    _warm(engram)
    kept = engram.lifecycle.remember(NewMemory(content=KEIKO), LOCAL).memory
    assert engram.memories.purge([kept.id], LOCAL) == 1
    again = engram.lifecycle.remember(NewMemory(content=KEIKO), LOCAL)
    assert again.action is WriteAction.CREATED and again.memory.id != kept.id
    assert engram.store.get([kept.id]) == []


def test_an_indexed_fact_edited_elsewhere_is_read_back_whole(engram: Engram) -> None:
    """Facts the index read from the store (text only) are merged into as the store holds them."""
    stored = engram.memories.add(NewMemory(content=KEIKO), LOCAL)  # before the index exists
    engram.memories.update(stored.id, MemoryPatch(tags=["bees"]), LOCAL)
    _warm(engram)
    out = engram.lifecycle.remember(NewMemory(content=KEIKO), LOCAL)
    assert out.action is WriteAction.MERGED and out.absorbed_into == stored.id
    merged = engram.store.get([stored.id])[0]
    assert merged.tags == ["bees"] and merged.reinforcement_count == 1 and merged.version == 3


def test_a_write_with_nothing_to_look_up_never_builds_the_index(engram: Engram) -> None:
    env = engram.environments.resolve(None, LOCAL).id
    indexes = FactIndexes(engram.store)
    with indexes.lock:
        for _ in range(3 * WARM_LOOKUPS):
            assert indexes.index(env, 0) is None
        assert indexes.index(env, WARM_LOOKUPS - 1) is None  # the warm-up is still owed
        assert indexes.index(env, 1) is not None
