"""The storage protocol itself, on every backend (the ``store`` fixture runs SQLite and
PostgreSQL): writes with their versions, filters, keyword and vector search, embeddings; the
dashboard's sessions and the OAuth client registry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engram.errors import Conflict
from engram.models import (
    Action,
    Environment,
    EpisodeDetails,
    Layer,
    Memory,
    MemoryFilter,
    MemoryVersion,
    ProcedureDetails,
    Status,
)
from engram.store import Access, Change, EmbeddingUpdate, Store
from engram.text import content_hash

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _env(store: Store, env_id: str = "env_a") -> Environment:
    env = Environment(id=env_id, name=env_id, owner="usr_1", created_at=T0, metadata={"k": 1})
    store.create_environment(env)
    return env


def _memory(mid: str, content: str, env: str = "env_a", **fields: object) -> Memory:
    return Memory.model_validate(
        {
            "id": mid,
            "environment_id": env,
            "layer": "fact",
            "content": content,
            "created_at": T0,
            "updated_at": T0,
            **fields,
        }
    )


def _change(m: Memory, action: Action = Action.CREATE) -> Change:
    return Change(
        m,
        MemoryVersion(
            memory_id=m.id,
            version=m.version,
            action=action,
            at=m.updated_at,
            actor="usr_1",
            snapshot=m,
        ),
    )


def _unit(values: list[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_environments_round_trip(store: Store) -> None:
    env = _env(store)
    _env(store, "env_b")
    assert store.get_environment("env_a") == env
    assert store.find_environment("usr_1", "env_b") is not None
    assert store.find_environment("usr_2", "env_b") is None
    assert [e.id for e in store.list_environments("usr_1")] == ["env_a", "env_b"]
    assert store.list_environments("nobody") == []
    store.write([_change(_memory("m1", "kept apart"))])
    store.delete_environment("env_a")
    assert store.get_environment("env_a") is None
    assert store.get(["m1"]) == [] and store.versions("m1") == []


def test_write_upserts_and_appends_versions(store: Store) -> None:
    _env(store)
    proc = ProcedureDetails(name="release", trigger="on tag", steps=["bump", "tag"])
    m1 = _memory("m1", "Deploys go through staging", tags=["ops", "ci"], metadata={"a": [1]})
    m2 = _memory("m2", "Cut a release", layer="procedure", procedure=proc, pinned=True)
    store.write([_change(m1), _change(m2)])
    m1b = m1.model_copy(
        update={
            "content": "Deploys go through canary",
            "version": 2,
            "updated_at": T0 + timedelta(seconds=5),
        }
    )
    store.write([_change(m1b, Action.UPDATE)])
    assert store.get(["m2", "missing", "m1"]) == [m2, m1b]
    assert [(v.version, v.action, v.snapshot.content) for v in store.versions("m1")] == [
        (1, Action.CREATE, "Deploys go through staging"),
        (2, Action.UPDATE, "Deploys go through canary"),
    ]
    assert store.versions("m2")[0].snapshot == m2


def test_a_failed_write_leaves_nothing(store: Store) -> None:
    _env(store)
    store.write([_change(_memory("m1", "first"))])
    with pytest.raises(Conflict):  # both backends translate their integrity error
        # version 1 of m1 exists already: the whole batch must roll back
        store.write([_change(_memory("m2", "second")), _change(_memory("m1", "again"))])
    assert [m.content for m in store.get(["m1", "m2"])] == ["first"]


def test_atomic_keeps_all_of_a_block_or_none_of_it(store: Store) -> None:
    """Every write in ``atomic()`` (memories by group commit, environments, sub-stores) is one
    transaction: the block reads its own writes, a failure inside it, even one the block
    caught after a savepoint rolled it back, keeps nothing once the block raises, and a block
    that ends commits all of it."""
    from engram.accounts import User

    user = User(id="usr_1", name="ann", created_at=T0)
    with pytest.raises(RuntimeError), store.atomic():
        store.accounts.create_user(user, None)
        _env(store)
        store.write([_change(_memory("m1", "first"))])
        with pytest.raises(Conflict):  # a savepoint: the block goes on
            store.write([_change(_memory("m1", "again"))])
        assert [m.content for m in store.get(["m1"])] == ["first"]
        assert store.get_environment("env_a") is not None
        assert store.accounts.get_user("usr_1") == user
        raise RuntimeError("the block fails")
    assert store.list_environments() == [] and store.accounts.list_users() == []
    assert store.get(["m1"]) == [] and store.count(MemoryFilter(statuses=list(Status))) == 0
    with store.atomic():
        _env(store)
        store.write([_change(_memory("m1", "first"))])
    assert [m.content for m in store.get(["m1"])] == ["first"]
    store.write([_change(_memory("m2", "after"))])  # the store writes as before
    assert [m.content for m in store.get(["m1", "m2"])] == ["first", "after"]


def test_filters_orders_and_counts(store: Store) -> None:
    _env(store)
    _env(store, "env_b")
    rows = [
        _memory("m1", "one", tags=["a", "b"], importance=0.9, category="preference"),
        _memory(
            "m2",
            "two",
            tags=["a"],
            importance=0.2,
            created_at=T0 + timedelta(days=1),
            updated_at=T0 + timedelta(days=1),
        ),
        _memory("m3", "three", status="deleted"),
        _memory("m4", "four", env="env_b", layer="episode"),
    ]
    store.write([_change(m) for m in rows])

    def ids(flt: MemoryFilter, order: str = "-updated_at", offset: int = 0) -> list[str]:
        return [m.id for m in store.list_memories(flt, limit=10, order=order, offset=offset)]

    assert ids(MemoryFilter(), order="-updated_at") == ["m2", "m4", "m1"]
    assert ids(MemoryFilter(environment_ids=["env_a"]), order="-importance") == ["m1", "m2"]
    assert ids(MemoryFilter(tags=["a", "b"])) == ["m1"]
    assert ids(MemoryFilter(tags=["a"]), order="created_at") == ["m1", "m2"]
    assert ids(MemoryFilter(statuses=[Status.DELETED])) == ["m3"]
    assert ids(MemoryFilter(layers=[Layer.EPISODE])) == ["m4"]
    assert ids(MemoryFilter(categories=["preference"])) == ["m1"]
    assert ids(MemoryFilter(created_after=T0 + timedelta(hours=1))) == ["m2"]
    assert ids(MemoryFilter(min_importance=0.6, max_importance=1.0)) == ["m1"]
    assert ids(MemoryFilter(ids=["m1", "m4"]), order="-updated_at") == ["m4", "m1"]
    assert ids(MemoryFilter(), order="-updated_at", offset=1) == ["m4", "m1"]
    assert store.count(MemoryFilter()) == 3
    assert store.count(MemoryFilter(environment_ids=["env_b"])) == 1


def test_record_access_rank_fields_and_purge(store: Store) -> None:
    _env(store)
    store.write([_change(_memory("m1", "one")), _change(_memory("m2", "two", category="tool"))])
    at = T0 + timedelta(hours=2)
    later = at + timedelta(minutes=5)
    # one id listed twice (two flushes' worth in one write): the reads add up, the latest wins
    store.record_access([Access("m1", 1, later), Access("m1", 1, at), Access("m2", 1, at)])
    got = {m.id: m for m in store.get(["m1", "m2"])}
    assert (got["m1"].access_count, got["m2"].access_count) == (2, 1)
    assert got["m1"].last_accessed_at == later and got["m2"].last_accessed_at == at
    store.record_access([Access("m2", 3, at - timedelta(hours=1))])  # an older read: counted
    (m2,) = store.get(["m2"])
    assert m2.access_count == 4 and m2.last_accessed_at == at  # ... but not the latest
    assert len(store.versions("m1")) == 1  # an access is not a version
    fields = {f.memory_id: f for f in store.rank_fields(["m2", "m1", "nope"])}
    assert fields["m1"].access_count == 2 and fields["m2"].updated_at == T0
    assert fields["m2"].category == "tool" and fields["m2"].layer is Layer.FACT
    store.put_embeddings("model", [EmbeddingUpdate("m1", "h", _unit([1, 0, 0]))])
    assert store.purge(["m1", "nope"]) == 1
    assert store.get(["m1"]) == [] and store.versions("m1") == []
    assert store.embedding_stats() == {}
    assert store.keyword_search("one", MemoryFilter(), limit=5) == []


def test_a_write_of_a_memory_read_before_its_reads_were_counted_keeps_them(
    store: Store,
) -> None:
    """The lifecycle reads a memory, reads of it are counted meanwhile (the access recorder
    flushes off the request path), then it writes its change: the counts stay, whatever the
    stale copy held. Before, the write set them back to the copy's."""
    _env(store)
    store.write([_change(_memory("m1", "one"))])
    (stale,) = store.get(["m1"])
    at = T0 + timedelta(hours=2)
    store.record_access([Access("m1", 3, at)])
    changed = stale.model_copy(update={"importance": 0.9, "version": 2})
    store.write([_change(changed, Action.UPDATE)])
    (m1,) = store.get(["m1"])
    assert (m1.importance, m1.access_count, m1.last_accessed_at) == (0.9, 3, at)


def test_keyword_search_ors_terms_ranks_and_filters(store: Store) -> None:
    _env(store)
    _env(store, "env_b")
    store.write(
        [
            _change(_memory("m1", "The deployment pipeline uses staging servers")),
            _change(_memory("m2", "Staging is where deployments are verified; deploy often")),
            _change(_memory("m3", "Lunch preferences: ramen", keyword_context="staging chat")),
            _change(_memory("m4", "staging in another project", env="env_b")),
            _change(_memory("m5", "deleted staging note", status="deleted")),
        ]
    )
    hits = store.keyword_search("How do we DEPLOY to staging?", MemoryFilter(), limit=10)
    found = [h.memory_id for h in hits]
    assert set(found) == {"m1", "m2", "m3", "m4"}  # stemmed, ORed, keyword_context indexed
    assert found[0] == "m2" and hits[0].score >= hits[-1].score > 0
    # each hit says which query words it matched (stemmed as the index does), in its own
    # text or only in its keyword context, and its layer
    by_id = {h.memory_id: h for h in hits}
    assert by_id["m2"].matched == {"deploy", "staging"} and by_id["m2"].matched_context == set()
    assert "staging" in by_id["m1"].matched
    assert by_id["m3"].matched == set() and by_id["m3"].matched_context == {"staging"}
    assert by_id["m1"].layer is Layer.FACT
    scoped = store.keyword_search("staging", MemoryFilter(environment_ids=["env_b"]), limit=10)
    assert [h.memory_id for h in scoped] == ["m4"]
    assert store.keyword_search("the and of", MemoryFilter(), limit=10) == []
    assert store.keyword_search("\"') OR * -- NEAR(", MemoryFilter(), limit=10) == []
    assert len(store.keyword_search("staging", MemoryFilter(), limit=2)) == 2


def test_vectors_by_model_with_filters(store: Store) -> None:
    _env(store)
    _env(store, "env_b")
    store.write(
        [
            _change(_memory(f"m{i}", f"memory {i}", env="env_b" if i == 3 else "env_a"))
            for i in range(1, 5)
        ]
    )
    pending = store.pending_embeddings("small", limit=10)
    assert [p.memory_id for p in pending] == ["m1", "m2", "m3", "m4"]
    assert pending[0].content_hash == content_hash("memory 1")
    store.put_embeddings(
        "small",
        [
            EmbeddingUpdate("m1", pending[0].content_hash, _unit([1, 0, 0])),
            EmbeddingUpdate("m2", pending[1].content_hash, _unit([1, 1, 0])),
            EmbeddingUpdate("m3", pending[2].content_hash, _unit([1, 0.1, 0])),
        ],
    )
    store.put_embeddings("large", [EmbeddingUpdate("m1", "h", _unit([0, 0, 0, 1, 0]))])
    assert [p.memory_id for p in store.pending_embeddings("small", limit=10)] == ["m4"]
    assert store.embedding_stats() == {"small": 3, "large": 1}
    query = _unit([1, 0.01, 0])
    hits = store.vector_search(query, "small", MemoryFilter(), limit=10)
    assert [h.memory_id for h in hits] == ["m1", "m3", "m2"]
    assert hits[0].score == pytest.approx(float(query @ _unit([1, 0, 0])), abs=1e-5)
    scoped = store.vector_search(query, "small", MemoryFilter(environment_ids=["env_a"]), limit=1)
    assert [h.memory_id for h in scoped] == ["m1"]
    assert store.vector_search(_unit([1, 0, 0, 0, 0]), "small", MemoryFilter(), limit=5) == []
    scores = store.vector_scores(query, "small", ["m2", "m4", "zz"])
    assert set(scores) == {"m2"} and scores["m2"] == pytest.approx(
        float(query @ _unit([1, 1, 0])), abs=1e-5
    )
    # new content makes the vector stale
    store.write([_change(_memory("m2", "memory two, edited", version=2), Action.UPDATE)])
    assert [p.memory_id for p in store.pending_embeddings("small", limit=10)] == ["m2", "m4"]
    assert store.prune_embeddings("small") == 1
    assert store.embedding_stats() == {"small": 3}


def test_pending_embeddings_carry_each_layers_searchable_text(store: Store) -> None:
    _env(store)
    proc = ProcedureDetails(name="release", trigger="on tag", steps=["bump", "push"])
    episode = EpisodeDetails(key_decisions=["ship on Friday"])
    memories = [
        _memory("m1", "Deploys go through staging"),
        _memory("m2", "Cut a release", layer="procedure", procedure=proc),
        _memory("m3", "Discussed the launch", layer="episode", episode=episode),
    ]
    store.write([_change(m) for m in memories])
    pending = store.pending_embeddings("small", limit=10)
    assert [p.text for p in pending] == [m.search_text() for m in memories]
    assert "ship on Friday" in pending[2].text and "push" in pending[1].text
    assert [p.content_hash for p in pending] == [content_hash(m.search_text()) for m in memories]


def test_migrations_are_recorded(store: Store) -> None:
    names = store.applied_migrations()
    assert names and names[0] == "0001_memories" and len(names) == len(set(names))


def test_web_sessions(store: Store) -> None:
    from engram.accounts import User
    from engram.store.web_sessions import WebSessionRecord

    for uid in ("usr_1", "usr_2"):
        store.accounts.create_user(User(id=uid, name=uid, created_at=T0), None)
    sessions = store.web_sessions
    day = timedelta(hours=12)
    sessions.put(WebSessionRecord("d1", "usr_1", T0, T0 + day), expired_before=T0)
    sessions.put(WebSessionRecord("d2", "usr_1", T0, T0 + day), expired_before=T0)
    sessions.put(WebSessionRecord("d3", "usr_2", T0, T0 + day, "env_x"), expired_before=T0)
    assert sessions.get("d1") == WebSessionRecord("d1", "usr_1", T0, T0 + day)
    sessions.switch("d1", "env_a")
    got = sessions.get("d1")
    assert got is not None and got.environment == "env_a"
    assert sessions.delete("d1") and not sessions.delete("d1")
    assert sessions.get("d1") is None
    assert sessions.delete_for_user("usr_1") == 1 and sessions.get("d3") is not None
    # putting one deletes those expired before the time given
    later = T0 + day + timedelta(seconds=1)
    sessions.put(WebSessionRecord("d4", "usr_2", later, later + day), expired_before=later)
    assert sessions.get("d3") is None and sessions.get("d4") is not None
    with pytest.raises(Conflict):  # a session belongs to an existing user
        sessions.put(WebSessionRecord("d5", "usr_9", later, later + day), expired_before=later)


def test_client_registry_caps_and_cleans_up_unclaimed_clients(store: Store) -> None:
    from engram.accounts import User
    from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord

    registry = store.oauth_registry
    hour = timedelta(hours=1)
    for i in range(3):
        assert registry.register(ClientRecord(f"c{i}", "{}", T0), stale_before=T0, cap=3)
    assert not registry.register(ClientRecord("c3", "{}", T0), stale_before=T0, cap=3)
    assert store.oauth.get_client("c3") is None and registry.unclaimed() == 3
    # a grant claims c0: it no longer counts, and is never cleaned up
    store.accounts.create_user(User(id="usr_1", name="u", created_at=T0), None)
    grant = GrantRecord("grt_1", "usr_1", "c0", "c0", ("read",), "https://x/mcp", T0)
    store.oauth.create_grant(grant, CodeRecord("cd", "grt_1", "ch", "https://x/cb", True, T0))
    assert registry.unclaimed() == 2
    assert registry.register(ClientRecord("c3", "{}", T0 + hour), stale_before=T0, cap=3)
    # the unclaimed ones registered before the cut-off go with the next registration
    assert registry.register(ClientRecord("c4", "{}", T0 + 2 * hour), stale_before=T0 + hour, cap=3)
    assert [store.oauth.get_client(c) is not None for c in ("c0", "c1", "c2", "c3", "c4")] == [
        True,
        False,
        False,
        True,
        True,
    ]
    assert registry.unclaimed() == 2


def test_superseded_facts_by_the_messages_they_were_read_from(store: Store) -> None:
    _env(store)
    _env(store, "env_b")
    said = {"source_message_ids": ["msg_1", "msg_2"]}
    c = {"thread": "cnv_1"}
    rows = [
        _memory(
            "old", "lives in Porto", status="superseded", superseded_by="new", metadata=said
        ).model_copy(update=c),
        _memory("new", "moved to Lisbon", metadata={"source_message_ids": ["msg_3"]}, **c),
        _memory("live", "likes tea", metadata={"source_message_ids": ["msg_1"]}, **c),  # active
        _memory("ep", "a chat", layer="episode", status="superseded", metadata=said, **c),
        _memory("other", "lives in Oslo", env="env_b", status="superseded", metadata=said, **c),
        _memory("bare", "lives in Rome", status="superseded", **c),
        _memory("odd", "lives in Bern", status="superseded", metadata={"source_message_ids": 7}),
        # another conversation's fact naming the same message ids is not looked at
        _memory("far", "lives in Pisa", status="superseded", metadata=said, thread="cnv_2"),
    ]
    store.write([_change(m) for m in rows], [])
    one = ["cnv_1"]
    assert [m.id for m in store.superseded_from("env_a", one, ["msg_2", "msg_9"])] == ["old"]
    assert [m.id for m in store.superseded_from("env_a", one, ["msg_1", "msg_2"])] == ["old"]
    assert store.superseded_from("env_a", one, ["msg_3"]) == []
    assert store.superseded_from("env_a", one, []) == []
    assert store.superseded_from("env_a", [], ["msg_1"]) == []
    both = {m.id for m in store.superseded_from("env_a", ["cnv_1", "cnv_2"], ["msg_1"])}
    assert both == {"old", "far"}
    found = store.superseded_from("env_a", one, [f"msg_{i}" for i in range(600)])
    assert found[0].superseded_by == "new" and found[0].metadata == said and len(found) == 1
