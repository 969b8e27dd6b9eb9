"""The keyword stage beside the vector stage (store/sqlite/beside.py): run on a worker thread
while the caller scans, run by the caller when another search is under way or the store
closed, its errors raised where its value is asked for; a hybrid search's hits are those of
each stage alone."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from engram import LOCAL, Engram, Layer, MemoryFilter, NewMemory
from engram.store import EmbeddingUpdate
from engram.store.protocol import KeywordQuery, VectorQuery
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.beside import Beside


def test_a_stage_runs_on_a_worker_while_the_caller_goes_on() -> None:
    beside = Beside()
    go = threading.Event()

    def stage() -> str:
        assert go.wait(5)  # the caller goes on before the stage can finish
        return threading.current_thread().name

    result = beside.start(stage)
    go.set()
    assert result().startswith("engram-sqlite-keyword")
    beside.close()


def test_with_another_search_under_way_the_caller_runs_the_stage_itself() -> None:
    beside, hold = Beside(), threading.Event()
    busy = beside.start(lambda: hold.wait(5))
    here = beside.start(threading.current_thread)
    hold.set()
    assert busy() is True
    assert here() is threading.current_thread()  # run by its caller, when asked for
    # nothing else under way again: the next stage goes to the worker
    assert beside.start(threading.current_thread)() is not threading.current_thread()
    beside.close()
    assert beside.start(threading.current_thread)() is threading.current_thread()  # closed


def test_a_stage_s_error_is_raised_where_its_value_is_asked_for() -> None:
    beside = Beside()

    def fails() -> None:
        raise ValueError("no such term")

    result = beside.start(fails)
    with pytest.raises(ValueError, match="no such term"):
        result()
    beside.close()


def test_a_hybrid_search_s_streams_are_each_stage_s_own(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    engram = Engram(store)
    env = engram.environments.create("e", LOCAL)
    texts = [f"alice {'likes' if i % 3 else 'avoids'} the blue{i % 7} service" for i in range(300)]
    memories = engram.memories.add_many([NewMemory(content=t) for t in texts], LOCAL, "e")
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((len(memories), 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pending = {p.memory_id: p for p in store.pending_embeddings("m", limit=1000)}
    store.put_embeddings(
        "m",
        [
            EmbeddingUpdate(m.id, pending[m.id].content_hash, v)
            for m, v in zip(memories, vectors, strict=True)
        ],
    )
    flt = MemoryFilter(environment_ids=[env.id])
    facts = flt.model_copy(update={"layers": [Layer.FACT]})
    query = vectors[5] + 0.1 * vectors[9]
    streams = store.search_streams(
        KeywordQuery("alice avoids blue3", flt, 20),
        query,
        "m",
        [VectorQuery(flt, 10), VectorQuery(facts, 5)],
    )
    assert streams.keyword == store.keyword_search("alice avoids blue3", flt, limit=20)
    assert streams.keyword  # the keyword stage found something
    assert streams.nearest == [
        store.vector_search(query, "m", flt, limit=10),
        store.vector_search(query, "m", facts, limit=5),
    ]
    engram.close()
