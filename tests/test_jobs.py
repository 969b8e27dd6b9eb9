"""The background work of 'engram serve': the embedding indexer and scheduled maintenance."""

from __future__ import annotations

import time

from engram import LOCAL, Engram, NewMemory
from engram.retrieval.models import SearchMode
from engram.service.jobs import BackgroundJobs


def test_indexer_makes_new_memories_semantically_searchable(semantic_engram: Engram) -> None:
    e = semantic_engram
    jobs = BackgroundJobs(e, maintenance_every_s=0)
    jobs.start()
    try:
        m = e.memories.add(NewMemory(content="I am allergic to peanuts"), LOCAL)
        assert e.indexer is not None
        e.indexer.notify()
        deadline = time.monotonic() + 20
        found: list[str] = []
        while time.monotonic() < deadline and m.id not in found:
            result = e.search.search("nut allergy", LOCAL, mode=SearchMode.SEMANTIC)
            found = [i.memory.id for i in result.items]
            time.sleep(0.05)
        assert m.id in found
    finally:
        jobs.stop()
        e.indexer.stop()


def test_maintenance_sweeps_every_environment(semantic_engram: Engram) -> None:
    e = semantic_engram
    e.environments.create("second", LOCAL)
    e.memories.add(NewMemory(content="The build uses Gradle"), LOCAL)
    e.memories.add(NewMemory(content="The build uses Gradle"), LOCAL, "second")
    jobs = BackgroundJobs(e, maintenance_every_s=0)
    assert jobs.run_maintenance() == 2
