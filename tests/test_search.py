"""Hybrid search and the five-factor score on hand-made cases, with the real default embedder."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from engram import LOCAL, Engram, InvalidInput, Layer, MemoryFilter, NewMemory, Status
from engram.accounts import Scope
from engram.actors import Actor
from engram.errors import PermissionDenied
from engram.models import EpisodeDetails, ProcedureDetails
from engram.retrieval.models import SearchMode
from engram.store import EmbeddingUpdate
from engram.store.sqlite import SQLiteStore
from tests.conftest import FakeClock


def add(engram: Engram, content: str, **kw: object) -> str:
    return engram.memories.add(NewMemory.model_validate({"content": content, **kw}), LOCAL).id


def test_important_old_memory_beats_trivial_recent_one(
    semantic_engram: Engram, clock: FakeClock
) -> None:
    e = semantic_engram
    old = add(e, "Coffee: I only drink dark roast espresso", importance=0.95, confidence=0.9)
    clock.advance(days=200)
    new = add(e, "Coffee: had an espresso at the airport", importance=0.1, confidence=0.5)
    e.index_pending()
    result = e.search.search("espresso coffee", LOCAL, count_access=False)
    ids = [i.memory.id for i in result.items]
    assert ids[:2] == [old, new]
    first, second = result.items[0].breakdown, result.items[1].breakdown
    assert first.recency.value < second.recency.value  # older...
    assert first.importance.value > second.importance.value  # ...but it matters more


def test_breakdown_adds_up_and_names_its_streams(semantic_engram: Engram) -> None:
    e = semantic_engram
    for text in (
        "The staging database is on db-2.internal",
        "Our production database runs PostgreSQL 16",
        "Lunch is at noon on Fridays",
    ):
        add(e, text)
    e.index_pending()
    result = e.search.search("which database for staging", LOCAL, limit=3)
    assert result.items and result.semantic_available
    for item in result.items:
        b = item.breakdown
        factors = (b.relevance, b.importance, b.confidence, b.recency, b.frequency)
        assert sum(f.contribution for f in factors) == pytest.approx(item.score)
        assert sum(f.weight for f in factors) == pytest.approx(1.0)
        assert all(0.0 <= f.value <= 1.0 for f in factors)
        assert b.found_by
    top = result.items[0]
    assert "db-2" in top.memory.content
    assert top.breakdown.found_by == ["keyword", "semantic"]


def test_rare_word_found_by_keyword(semantic_engram: Engram) -> None:
    e = semantic_engram
    target = add(e, "Melanie's cousin lives in Zanzibar")
    for i in range(20):
        add(e, f"Melanie went to the park with her kids, day {i}")
    e.index_pending()
    hybrid = e.search.search("who lives in Zanzibar", LOCAL, count_access=False)
    assert hybrid.items[0].memory.id == target
    assert "keyword" in hybrid.items[0].breakdown.found_by
    keyword = e.search.search("Zanzibar", LOCAL, mode=SearchMode.KEYWORD, count_access=False)
    assert [i.memory.id for i in keyword.items] == [target]
    assert keyword.items[0].breakdown.semantic_similarity is None


def test_keyword_only_engram(engram: Engram) -> None:
    m = add(engram, "Deploys happen on Tuesdays")
    result = engram.search.search("when are deploys", LOCAL)
    assert [i.memory.id for i in result.items] == [m]
    assert not result.semantic_available
    with pytest.raises(InvalidInput, match="needs an embedder"):
        engram.search.search("deploys", LOCAL, mode=SearchMode.SEMANTIC)


def test_semantic_finds_paraphrase_without_shared_words(semantic_engram: Engram) -> None:
    e = semantic_engram
    target = add(e, "I am allergic to peanuts")
    add(e, "The quarterly report is due in March")
    add(e, "My laptop is a ThinkPad")
    e.index_pending()
    result = e.search.search("nut allergy", LOCAL, mode=SearchMode.SEMANTIC, count_access=False)
    assert result.items[0].memory.id == target
    assert result.items[0].breakdown.found_by == ["semantic"]


def test_filters_and_superseded(
    semantic_engram: Engram, store: SQLiteStore, clock: FakeClock
) -> None:
    e = semantic_engram
    a = add(e, "release checklist lives in the wiki", category="project", tags=["release"])
    clock.advance(days=3)
    b = add(e, "release happens every second Monday", category="decision")
    ep = e.memories.add(
        NewMemory(layer=Layer.EPISODE, content="Discussed the release", episode=EpisodeDetails()),
        LOCAL,
    ).id
    proc = e.memories.add(
        NewMemory(
            layer=Layer.PROCEDURE,
            content="release steps",
            procedure=ProcedureDetails(name="release", steps=["tag", "push"]),
        ),
        LOCAL,
    ).id
    e.index_pending()

    def ids(**kw: object) -> set[str]:
        flt = MemoryFilter.model_validate(kw) if kw else None
        found = e.search.search("release", LOCAL, flt=flt, count_access=False).items
        return {i.memory.id for i in found}

    assert ids() == {a, b, ep, proc}
    assert ids(layers=["procedure"]) == {proc}
    assert ids(layers=["fact"], categories=["decision"]) == {b}
    assert ids(tags=["release"]) == {a}
    assert ids(created_after=clock.now - timedelta(days=1)) == {b, ep, proc}
    # a superseded memory leaves search unless asked for
    old = e.memories.get(a, LOCAL)
    from engram.lifecycle.changes import record as record_change
    from engram.models import Action
    from engram.store import Change

    superseded = old.model_copy(update={"status": Status.SUPERSEDED, "version": 2})
    store.write([record_change(superseded, Action.SUPERSEDE, LOCAL)])
    assert a not in ids()
    found = e.search.search("release", LOCAL, include_superseded=True, count_access=False)
    assert a in {i.memory.id for i in found.items}
    assert isinstance(Change, type)


def test_search_counts_access(semantic_engram: Engram) -> None:
    e = semantic_engram
    m = add(e, "The VPN config is in 1Password")
    e.search.search("VPN config", LOCAL)
    e.search.search("VPN config", LOCAL)
    e.search.search("VPN config", LOCAL, count_access=False)
    e.accesses.flush()  # reads are counted a moment later (engram.service.accesses)
    got = e.memories.get(m, LOCAL)
    assert got.access_count == 2 and got.last_accessed_at is not None
    result = e.search.search("VPN config", LOCAL, count_access=False)
    assert result.items[0].breakdown.frequency.value > 0


def test_environment_isolation_in_search(semantic_engram: Engram) -> None:
    e = semantic_engram
    e.environments.create("other", LOCAL)
    mine = add(e, "the api key rotates monthly")
    e.memories.add(NewMemory(content="the api key rotates weekly"), LOCAL, "other")
    e.index_pending()
    found = e.search.search("api key rotation", LOCAL, count_access=False)
    assert [i.memory.id for i in found.items] == [mine]


def test_bad_search_input(semantic_engram: Engram) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        semantic_engram.search.search("x", LOCAL, limit=0)
    with pytest.raises(InvalidInput, match="query is"):
        semantic_engram.search.search("x" * 5000, LOCAL)


def test_empty_query_ranks_by_importance_and_recency(semantic_engram: Engram) -> None:
    e = semantic_engram
    low = add(e, "minor detail", importance=0.1)
    high = add(e, "critical rule: never force-push main", importance=0.95)
    result = e.search.search("", LOCAL, count_access=False)
    assert [i.memory.id for i in result.items] == [high, low]
    assert result.items[0].breakdown.relevance.weight == 0


def test_reembed_embeds_the_rest_then_prunes_other_models(semantic_engram: Engram) -> None:
    """``engram reembed --prune`` is a service method: the admin scope, then the vectors of
    the current model only."""
    e = semantic_engram
    assert e.indexer is not None
    first = add(e, "The staging database is on db-2.internal")
    e.store.put_embeddings(
        "an-older-model", [EmbeddingUpdate(first, "h", np.array([1.0, 0.0, 0.0], dtype=np.float32))]
    )
    reader = Actor(LOCAL.user_id, "api", scopes=frozenset({Scope.READ, Scope.WRITE}))
    with pytest.raises(PermissionDenied):
        e.indexer.reembed(reader, prune=True)
    assert e.store.embedding_stats() == {"an-older-model": 1}
    kept = e.indexer.reembed(LOCAL)
    assert (kept.embedded, kept.pruned) == (1, 0)
    assert kept.vectors == {"an-older-model": 1, e.indexer.model_id: 1}
    pruned = e.indexer.reembed(LOCAL, prune=True)
    assert (pruned.embedded, pruned.pruned) == (0, 1)
    assert pruned.vectors == {e.indexer.model_id: 1}
