"""The SQLite keyword index: scoped to environment and layer inside FTS5, stems from the index's
own tokenizer, and drops terms too common to rank by."""

from __future__ import annotations

from pathlib import Path

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory
from engram.store.sqlite import SQLiteStore, fts


def test_stems_come_from_the_index_tokenizer() -> None:
    assert fts._stems(["running", "services", "Café"]) == {
        "running": "run",
        "services": "servic",
        "Café": "cafe",
    }


def test_common_terms_are_dropped_rare_ones_kept(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "k.db")
    e = Engram(store)
    e.environments.ensure_default(LOCAL)
    items = [NewMemory(content=f"the service handles request number {i}") for i in range(1200)]
    items.append(NewMemory(content="the service of zanzibar handles payments"))
    for start in range(0, len(items), 500):
        e.memories.add_many(items[start : start + 500], LOCAL)
    conn = store.db.reader()
    # 'service' and 'handles' are in every row: they would make FTS5 score all of them
    assert fts.query_terms(conn, "which service handles zanzibar") == ["zanzibar"]
    # a single word is never dropped
    assert fts.query_terms(conn, "service") == ["service"]
    hits = store.keyword_search("which service handles zanzibar", MemoryFilter(), limit=5)
    assert len(hits) == 1 and "zanzibar" in e.memories.get(hits[0].memory_id, LOCAL).content
    store.close()


def test_scope_filters_environment_and_layer(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    e = Engram(store)
    e.environments.create("a", LOCAL)
    e.environments.create("b", LOCAL)
    fa = e.memories.add(NewMemory(content="kiwi fact"), LOCAL, "a")
    e.memories.add(NewMemory(content="kiwi fact elsewhere"), LOCAL, "b")
    ep = e.memories.add(NewMemory(layer=Layer.EPISODE, content="kiwi episode"), LOCAL, "a")
    env_a = e.environments.resolve("a", LOCAL).id

    def ids(**kw: object) -> set[str]:
        flt = MemoryFilter.model_validate({"environment_ids": [env_a], **kw})
        return {h.memory_id for h in store.keyword_search("kiwi", flt, limit=10)}

    assert ids() == {fa.id, ep.id}
    assert ids(layers=["episode"]) == {ep.id}
    assert ids(layers=["fact"]) == {fa.id}
    # an edit moves the row's index entry with it
    e.memories.delete(fa.id, LOCAL)
    assert ids(layers=["fact"]) == set()
    store.close()
