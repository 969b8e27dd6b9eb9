"""Store.atomic() and the in-memory vector copy (both backends): a search inside a block that
rolls back must leave nothing of the block in the copy (the review of stop 35: another
environment's memory came back for a search, and a committed vector never reached the copy),
and a block that commits reaches it."""

from __future__ import annotations

import pytest

from engram.models import MemoryFilter
from engram.store import EmbeddingUpdate, Store
from engram.store.protocol import Vector
from engram.text import content_hash
from tests.test_store_contract import _change, _env, _memory, _unit


def _embed(store: Store, mid: str, text: str, vec: Vector) -> None:
    store.put_embeddings("m", [EmbeddingUpdate(mid, content_hash(text), vec)])


@pytest.mark.parametrize("preload", [False, True])
def test_rolled_back_search_poisons_the_copy(store: Store, preload: bool) -> None:
    _env(store, "env_a")
    _env(store, "env_b")
    store.write([_change(_memory("m0", "zero"))])
    _embed(store, "m0", "zero", _unit([0, 0, 1]))
    v1, v2 = _unit([1, 0, 0]), _unit([0.8, 0.6, 0])
    if preload:
        store.vector_search(v1, "m", MemoryFilter(environment_ids=["env_a"]), limit=5)
    with pytest.raises(RuntimeError), store.atomic():
        store.write([_change(_memory("m1", "one", env="env_a"))])
        _embed(store, "m1", "one", v1)
        # a search in the block: reads the block's uncommitted vector into the copy
        hits = store.vector_search(v1, "m", MemoryFilter(environment_ids=["env_a"]), limit=5)
        assert [h.memory_id for h in hits][:1] == ["m1"]
        raise RuntimeError("rolled back")
    # committed afterwards: another environment's memory, likely on the same seq and rev
    store.write([_change(_memory("m2", "two", env="env_b"))])
    _embed(store, "m2", "two", v2)
    in_b = store.vector_search(v2, "m", MemoryFilter(environment_ids=["env_b"]), limit=5)
    in_a = store.vector_search(v1, "m", MemoryFilter(environment_ids=["env_a"]), limit=5)
    assert "m2" not in [h.memory_id for h in in_a], "env_b's memory returned for env_a"
    assert [h.memory_id for h in in_b][:1] == ["m2"], "m2's committed vector never reached the copy"


def test_search_then_write_in_a_committed_block(store: Store) -> None:
    """A block that searches, then writes a vector, and commits: the vector must reach the copy."""
    _env(store, "env_a")
    store.write([_change(_memory("m0", "zero"))])
    _embed(store, "m0", "zero", _unit([0, 0, 1]))
    flt = MemoryFilter(environment_ids=["env_a"])
    store.vector_search(_unit([0, 0, 1]), "m", flt, limit=5)  # the copy is loaded
    v1 = _unit([1, 0, 0])
    with store.atomic():
        store.vector_search(v1, "m", flt, limit=5)
        store.write([_change(_memory("m1", "one"))])
        _embed(store, "m1", "one", v1)
    hits = store.vector_search(v1, "m", flt, limit=5)
    assert [h.memory_id for h in hits][:1] == ["m1"]
