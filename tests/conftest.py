"""Tests run against real databases in temporary places, never the user's data: the ``store``
fixture (and so ``engram``) runs each test on a SQLite file and on a fresh PostgreSQL database
(see tests/pg_server.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import psycopg
import pytest

from engram import Engram
from engram.embeddings.static import StaticEmbedder, ensure_default_static_model
from engram.store import EmbeddingUpdate, Store
from engram.store.sqlite import SQLiteStore
from tests.pg_server import pg_admin_url, pg_url

__all__ = ["pg_admin_url", "pg_url"]  # session PostgreSQL fixtures, re-exported for pytest


class FakeClock:
    """A clock that only moves when told to (each reading advances 1 ms so times stay ordered)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


def embed_randomly(
    store: Store, model_id: str, ids: Sequence[str], rng: np.random.Generator, dim: int = 16
) -> np.ndarray:
    """Give each of the (pending) memories ``ids`` a random unit vector of ``model_id``, stored
    as the indexer would store it; the vectors, in the order of ``ids``."""
    vecs = rng.standard_normal((len(ids), dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    pending = {p.memory_id: p for p in store.pending_embeddings(model_id, limit=10_000)}
    store.put_embeddings(
        model_id,
        [EmbeddingUpdate(i, pending[i].content_hash, v) for i, v in zip(ids, vecs, strict=True)],
    )
    return vecs


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ENGRAM_HOME", str(home))
    monkeypatch.delenv("ENGRAM_ENV", raising=False)
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    # outside any git repository: the checkout's own project must not choose the environment
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store
    if request.param == "postgres":
        from engram.store.postgres import PostgresStore

        s = PostgresStore(request.getfixturevalue("pg_url"))
    else:
        s = SQLiteStore(tmp_path / "engram.db")
    yield s
    s.close()


@pytest.fixture
def engram(store: Store, clock: FakeClock) -> Iterator[Engram]:
    e = Engram(store, clock=clock)
    yield e
    e.accesses.close()  # its counts written before the store closes


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the default static model is distilled: ENGRAM_MODEL_CACHE (scripts/test keeps it
    in the checkout between runs) or a fresh directory for this session."""
    configured = os.environ.get("ENGRAM_MODEL_CACHE")
    if configured:
        return Path(configured)
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def default_embedder(model_cache: Path) -> StaticEmbedder:
    """The real default embedder (distilled from the shipped MiniLM weights on first use)."""
    return StaticEmbedder(ensure_default_static_model(model_cache))


@pytest.fixture
def semantic_engram(
    store: Store, clock: FakeClock, default_embedder: StaticEmbedder
) -> Iterator[Engram]:
    """An Engram with the default embedder: hybrid search and context assembly."""
    e = Engram(store, clock=clock, embedder=default_embedder)
    yield e
    e.accesses.close()  # its counts written before the store closes


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements sent from here on."""
    statements: list[str] = []
    execute = psycopg.Cursor.execute

    def counted(self: psycopg.Cursor[object], query: object, *args: object, **kw: object) -> object:
        statements.append(str(query))
        return execute(self, query, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    return statements
