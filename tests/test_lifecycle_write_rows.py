"""What the lifecycle's writes leave in the store, on both backends: a merge's new record is
stored once, already merged, with both of its versions; a changed memory reaches keyword and
vector search (its text rewritten in the keyword index only when it changed, a status change
reaching the in-memory vector index)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engram import LOCAL, Engram, MemoryFilter, NewMemory, Status
from engram.lifecycle import WriteAction
from engram.models import Action, Layer, MemoryPatch
from engram.store import Store
from tests.conftest import FakeClock
from tests.test_lifecycle import ChosenEmbedder


def _active(engram: Engram) -> MemoryFilter:
    env = engram.environments.ensure_default(LOCAL)
    return MemoryFilter(environment_ids=[env.id], layers=[Layer.FACT], statuses=[Status.ACTIVE])


def _keyword(engram: Engram, query: str) -> list[str]:
    return [h.memory_id for h in engram.store.keyword_search(query, _active(engram), limit=10)]


def test_a_merge_stores_its_record_once_merged_with_both_versions(engram: Engram) -> None:
    first = engram.lifecycle.remember(NewMemory(content="The team deploys with Ansible"), LOCAL)
    again = engram.lifecycle.remember(NewMemory(content="The team deploys with Ansible"), LOCAL)
    assert again.action is WriteAction.MERGED and again.merged_record is not None
    record = engram.store.get([again.merged_record])[0]
    assert (record.status, record.merged_into, record.version) == (
        Status.MERGED,
        first.memory.id,
        2,
    )
    assert [(v.version, v.action) for v in engram.store.versions(record.id)] == [
        (1, Action.CREATE),
        (2, Action.MERGE),
    ]
    assert [v.action for v in engram.store.versions(first.memory.id)] == [
        Action.CREATE,
        Action.MERGE,
    ]
    assert _keyword(engram, "ansible") == [first.memory.id]


def test_an_edit_reaches_keyword_search_and_a_status_change_keeps_the_text(
    engram: Engram,
) -> None:
    m = engram.memories.add(NewMemory(content="A quokka lives on Rottnest"), LOCAL)
    assert _keyword(engram, "quokka") == [m.id]
    engram.memories.update(m.id, MemoryPatch(content="A wombat lives in Tasmania"), LOCAL)
    assert _keyword(engram, "quokka") == []
    assert _keyword(engram, "wombat") == [m.id]
    engram.memories.update(m.id, MemoryPatch(importance=0.9), LOCAL)  # the text is unchanged
    assert _keyword(engram, "wombat") == [m.id]
    engram.memories.delete(m.id, LOCAL)
    assert _keyword(engram, "wombat") == []
    engram.memories.restore(m.id, LOCAL)
    assert _keyword(engram, "wombat") == [m.id]
    assert _keyword(engram, "quokka") == []


def test_a_superseded_fact_leaves_vector_search_and_its_undo_brings_it_back(
    store: Store, clock: FakeClock
) -> None:
    chosen = ChosenEmbedder()
    chosen.anchor("Moved to Lisbon last spring")
    chosen.near("Lives in Madrid", 0.85)
    engram = Engram(store, clock=clock, embedder=chosen)
    old = engram.lifecycle.remember(NewMemory(content="Lives in Madrid"), LOCAL).memory
    query = chosen.embed_batch(["Lives in Madrid"])[0]

    def near() -> list[str]:
        hits = store.vector_search(query, chosen.model_id, _active(engram), limit=10)
        return [h.memory_id for h in hits]

    assert near() == [old.id]  # the vector index now holds it as active
    out = engram.lifecycle.remember(NewMemory(content="Moved to Lisbon last spring"), LOCAL)
    assert out.superseded == old.id
    assert near() == [out.memory.id]
    engram.lifecycle.undo(old.id, LOCAL)
    assert sorted(near()) == sorted([old.id, out.memory.id])


class _Counting(ChosenEmbedder):
    """Counts the texts it embeds and the calls that asked; computes here (as the static model
    does), unless told it is remote."""

    def __init__(self, *, remote: bool = False) -> None:
        super().__init__()
        self.calls: list[list[str]] = []
        self.in_process = not remote

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return super().embed_batch(texts)


def test_a_write_embeds_its_text_only_when_it_is_kept_or_looked_up_by_meaning(
    store: Store, clock: FakeClock
) -> None:
    counting = _Counting()
    engram = Engram(store, clock=clock, embedder=counting)
    first = engram.lifecycle.remember(NewMemory(content="The team deploys with Ansible"), LOCAL)
    assert counting.calls == [["The team deploys with Ansible"]]  # looked up, then stored
    assert store.pending_embeddings(counting.model_id, limit=10) == []
    # a duplicate on keyword evidence is merged without a vector (its record, out of search,
    # is left to the background indexer)
    again = engram.lifecycle.remember(NewMemory(content="The team deploys with Ansible"), LOCAL)
    assert again.action is WriteAction.MERGED and again.absorbed_into == first.memory.id
    assert len(counting.calls) == 1
    # a batch embeds its checked texts in one call
    counting.calls.clear()
    engram.lifecycle.remember_many(
        [NewMemory(content="Ravi prefers tea"), NewMemory(content="Ravi lives in Pune")], LOCAL
    )
    assert counting.calls == [["Ravi prefers tea", "Ravi lives in Pune"]]
    pending = store.pending_embeddings(counting.model_id, limit=10)
    assert [p.memory_id for p in pending] == [again.merged_record]


def test_a_remote_embedder_is_called_before_the_write_and_a_failing_one_stores_nothing(
    store: Store, clock: FakeClock
) -> None:
    remote = _Counting(remote=True)
    engram = Engram(store, clock=clock, embedder=remote)
    first = engram.lifecycle.remember(NewMemory(content="Caroline lives in Porto"), LOCAL)
    engram.lifecycle.remember(NewMemory(content="Caroline lives in Porto"), LOCAL)
    # embedded up front (outside the write's lock), even for the merge that needed no vector
    assert remote.calls == [["Caroline lives in Porto"], ["Caroline lives in Porto"]]

    class Failing(_Counting):
        def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
            if any("Lisbon" in t for t in texts):
                raise RuntimeError("embedding service unavailable")
            return super().embed_batch(texts)

    for failing in (Failing(), Failing(remote=True)):
        engram = Engram(store, clock=clock, embedder=failing)
        try:
            engram.lifecycle.remember(NewMemory(content="Caroline moved to Lisbon"), LOCAL)
        except RuntimeError:
            pass
        else:
            raise AssertionError("the embedder's error reaches the caller")
        # nothing was written: the older fact is still the active one
        assert store.get([first.memory.id])[0].status is Status.ACTIVE
        found = store.keyword_search("Lisbon", _active(engram), limit=10)
        assert found == []
