from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from pydantic import ValidationError

from engram import (
    LOCAL,
    Actor,
    Conflict,
    Engram,
    EpisodeDetails,
    InvalidInput,
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    NotFound,
    ProcedureDetails,
    Status,
)
from engram.lifecycle.changes import record as record_change
from engram.models import Action
from engram.store import Access
from engram.store.protocol import EmbeddingUpdate, Store
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock
from tests.sql import query


def fact(content: str, **kw: object) -> NewMemory:
    return NewMemory.model_validate({"content": content, **kw})


def test_fact_crud_with_versions(engram: Engram) -> None:
    m = engram.memories.add(
        fact("I prefer dark roast", category="preference", tags=["Coffee"]), LOCAL
    )
    assert m.layer is Layer.FACT and m.version == 1 and m.tags == ["coffee"]
    assert m.author == "local"
    got = engram.memories.get(m.id, LOCAL)
    assert got == m

    edited = engram.memories.update(
        m.id, MemoryPatch(content="I prefer light roast", importance=0.9), LOCAL, "changed taste"
    )
    assert edited.version == 2 and edited.importance == 0.9 and edited.category == "preference"
    assert engram.memories.get(m.id, LOCAL).content == "I prefer light roast"

    history = engram.memories.history(m.id, LOCAL)
    assert [(v.version, v.action) for v in history] == [(1, Action.CREATE), (2, Action.UPDATE)]
    assert history[0].snapshot.content == "I prefer dark roast"
    assert history[1].reason == "changed taste"


def test_an_edit_that_changes_nothing_writes_no_version(engram: Engram) -> None:
    """An empty patch, or one whose values are the memory's own, wrote a no-op version over
    REST and MCP (the dashboard already said "nothing changed")."""
    m = engram.memories.add(fact("I prefer dark roast", tags=["coffee"]), LOCAL)
    for patch in (
        MemoryPatch(),
        MemoryPatch(content="I prefer dark roast", tags=["coffee"], importance=m.importance),
    ):
        same = engram.memories.update(m.id, patch, LOCAL)
        assert same.version == 1 and same == engram.memories.get(m.id, LOCAL)
    assert [v.version for v in engram.memories.history(m.id, LOCAL)] == [1]
    assert engram.memories.update(m.id, MemoryPatch(importance=0.9), LOCAL).version == 2


def test_episode_and_procedure_layers(engram: Engram, clock: FakeClock) -> None:
    start = clock.now
    ep = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content="Debugged the flaky upload test; root cause was a race in the retry loop.",
            episode=EpisodeDetails(
                period_start=start,
                period_end=start + timedelta(hours=1),
                participants=["alice", "claude-code"],
                session_id="s-1",
                key_decisions=["add a lock around retries"],
            ),
        ),
        LOCAL,
    )
    assert ep.episode is not None and ep.episode.participants == ["alice", "claude-code"]
    proc = engram.memories.add(
        NewMemory(
            layer=Layer.PROCEDURE,
            content="How we cut a release",
            procedure=ProcedureDetails(
                name="release", trigger="when shipping", steps=["bump version", "tag", "push"]
            ),
        ),
        LOCAL,
    )
    assert proc.procedure is not None and proc.procedure.steps[1] == "tag"
    after = engram.memories.record_outcome(proc.id, LOCAL, success=True)
    after = engram.memories.record_outcome(
        proc.id, LOCAL, success=False, note="tag already existed"
    )
    assert after.procedure is not None
    assert (after.procedure.success_count, after.procedure.failure_count) == (1, 1)
    assert engram.memories.history(proc.id, LOCAL)[-1].reason == "failure: tag already existed"
    with pytest.raises(InvalidInput, match="not a procedure"):
        engram.memories.record_outcome(ep.id, LOCAL, success=True)

    page = engram.memories.list_memories(LOCAL, MemoryFilter(layers=[Layer.PROCEDURE]))
    assert [m.id for m in page.items] == [proc.id]


def test_layer_details_must_match_layer() -> None:
    with pytest.raises(ValidationError, match="procedure"):
        NewMemory(layer=Layer.PROCEDURE, content="no details")
    with pytest.raises(ValidationError, match="only for episodes"):
        NewMemory(content="x", episode=EpisodeDetails())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("importance", 1.5, "less than or equal to 1"),
        ("confidence", -0.1, "greater than or equal to 0"),
        ("content", "   ", "must not be empty"),
        ("category", "Not Valid!", "category"),
        ("tags", ["a,b"], "without commas"),
    ],
)
def test_bad_input_is_named(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        NewMemory.model_validate({"content": "ok", field: value})
    assert field in str(info.value)


def test_soft_delete_and_restore(engram: Engram) -> None:
    m = engram.memories.add(fact("The staging DB lives on db-2"), LOCAL)
    engram.memories.delete(m.id, LOCAL)
    assert engram.memories.get(m.id, LOCAL).status is Status.DELETED
    again = engram.memories.delete(m.id, LOCAL)  # deleting twice changes nothing
    assert again.status is Status.DELETED and again.version == 2
    assert engram.memories.list_memories(LOCAL).total == 0
    with pytest.raises(InvalidInput, match="restore it before editing"):
        engram.memories.update(m.id, MemoryPatch(content="x"), LOCAL)
    back = engram.memories.restore(m.id, LOCAL)
    assert back.status is Status.ACTIVE and back.version == 3
    assert engram.memories.list_memories(LOCAL).total == 1
    assert [v.action for v in engram.memories.history(m.id, LOCAL)] == [
        Action.CREATE,
        Action.DELETE,
        Action.RESTORE,
    ]


def test_restore_to_older_version_keeps_usage_counters(
    engram: Engram, store: SQLiteStore, clock: FakeClock
) -> None:
    m = engram.memories.add(fact("v1 text"), LOCAL)
    engram.memories.update(m.id, MemoryPatch(content="v2 text"), LOCAL)
    engram.memories.update(m.id, MemoryPatch(content="v3 text", tags=["x"]), LOCAL)
    store.record_access([Access(m.id, 1, clock())])
    restored = engram.memories.restore(m.id, LOCAL, version=1)
    assert restored.content == "v1 text" and restored.tags == [] and restored.version == 4
    assert restored.access_count == 1
    assert engram.memories.get(m.id, LOCAL).content == "v1 text"
    # the versions in between are still there
    assert [v.snapshot.content for v in engram.memories.history(m.id, LOCAL)] == [
        "v1 text",
        "v2 text",
        "v3 text",
        "v1 text",
    ]
    with pytest.raises(NotFound, match="no version 9"):
        engram.memories.restore(m.id, LOCAL, version=9)
    with pytest.raises(InvalidInput, match="already active"):
        engram.memories.restore(m.id, LOCAL)


def test_purge_removes_row_versions_index_and_vectors(engram: Engram, store: Store) -> None:
    keep = engram.memories.add(fact("zebra crossing near the office"), LOCAL)
    gone = engram.memories.add(fact("zebra stripes are unique"), LOCAL)
    vec = np.ones(4, dtype=np.float32) / 2
    store.put_embeddings(
        "test-model",
        [EmbeddingUpdate(m.id, "h", vec) for m in (keep, gone)],
    )
    flt = MemoryFilter()
    assert {h.memory_id for h in store.keyword_search("zebra", flt, limit=10)} == {keep.id, gone.id}
    assert len(store.vector_search(vec, "test-model", flt, limit=10)) == 2

    assert engram.memories.purge([gone.id], LOCAL) == 1

    with pytest.raises(NotFound):
        engram.memories.get(gone.id, LOCAL)
    assert store.versions(gone.id) == []
    assert [h.memory_id for h in store.keyword_search("zebra", flt, limit=10)] == [keep.id]
    assert [h.memory_id for h in store.vector_search(vec, "test-model", flt, limit=10)] == [keep.id]
    # and at the SQL level nothing is left behind (PostgreSQL keeps the keyword index in the row)
    index = "memories_fts" if isinstance(store, SQLiteStore) else "memories"
    assert query(store, f"SELECT count(*) FROM {index}") == [(1,)]
    assert query(store, "SELECT count(*) FROM memory_vectors") == [(1,)]
    assert query(store, "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (gone.id,)) == [
        (0,)
    ]


def test_bulk_create_is_atomic(engram: Engram, store: SQLiteStore) -> None:
    created = engram.memories.add_many([fact(f"bulk {i}") for i in range(50)], LOCAL)
    assert engram.memories.list_memories(LOCAL, limit=100).total == 50
    # an unknown id in a bulk update changes nothing
    with pytest.raises(NotFound):
        engram.memories.update_many(
            [(created[0].id, MemoryPatch(content="changed")), ("mem_nope", MemoryPatch())], LOCAL
        )
    assert engram.memories.get(created[0].id, LOCAL).content == "bulk 0"
    deleted = engram.memories.delete_many([m.id for m in created[:10]], LOCAL)
    assert len(deleted) == 10
    assert engram.memories.list_memories(LOCAL, limit=100).total == 40


def test_failed_write_leaves_nothing_half_written(engram: Engram, store: Store) -> None:
    m = engram.memories.add(fact("original"), LOCAL)
    # a second change that reuses version 1 violates the versions' primary key mid-transaction
    from engram.store import Change

    good = record_change(
        m.model_copy(update={"content": "changed", "version": 2}), Action.UPDATE, LOCAL
    )
    bad = record_change(m, Action.UPDATE, LOCAL)
    with pytest.raises(Conflict):  # the same domain error on every backend
        store.write([good, bad])
    assert engram.memories.get(m.id, LOCAL).content == "original"
    assert len(store.versions(m.id)) == 1
    assert isinstance(good, Change)


def test_list_filters(engram: Engram, clock: FakeClock) -> None:
    a = engram.memories.add(
        fact("a", category="preference", tags=["x", "y"], importance=0.9), LOCAL
    )
    clock.advance(days=10)
    b = engram.memories.add(fact("b", category="decision", tags=["x"], importance=0.2), LOCAL)
    c = engram.memories.add(fact("c", category="decision", importance=0.5), LOCAL)
    engram.memories.delete(c.id, LOCAL)

    def ids(**kw: object) -> set[str]:
        page = engram.memories.list_memories(LOCAL, MemoryFilter.model_validate(kw))
        return {m.id for m in page.items}

    assert ids() == {a.id, b.id}
    assert ids(categories=["decision"]) == {b.id}
    assert ids(tags=["x"]) == {a.id, b.id}
    assert ids(tags=["x", "y"]) == {a.id}
    assert ids(statuses=["deleted"]) == {c.id}
    assert ids(min_importance=0.5) == {a.id}
    assert ids(max_importance=0.5) == {b.id}
    assert ids(created_after=clock.now - timedelta(days=1)) == {b.id}
    assert ids(created_before=clock.now - timedelta(days=1)) == {a.id}
    # a range whose start is past its end is no error: it matches nothing
    assert ids(min_importance=0.8, max_importance=0.2) == set()
    later, earlier = clock.now, clock.now - timedelta(days=30)
    assert ids(created_after=later, created_before=earlier) == set()
    with pytest.raises(InvalidInput, match="limit"):
        engram.memories.list_memories(LOCAL, limit=0)
    with pytest.raises(InvalidInput, match="order"):
        engram.memories.list_memories(LOCAL, order="sideways")
    page = engram.memories.list_memories(LOCAL, limit=1, order="-importance")
    assert [m.id for m in page.items] == [a.id] and page.total == 2


def test_memories_of_other_users_are_invisible(engram: Engram) -> None:
    m = engram.memories.add(fact("private to local"), LOCAL)
    bob = Actor("bob")
    with pytest.raises(NotFound):
        engram.memories.get(m.id, bob)
    with pytest.raises(NotFound):
        engram.memories.delete(m.id, bob)
    with pytest.raises(NotFound):
        engram.memories.purge([m.id], bob)
    assert engram.memories.list_memories(bob).total == 0
