"""The composition of the services over one store: what every edge holds."""

from __future__ import annotations

from engram.clock import Clock, system_clock
from engram.config import Settings
from engram.embeddings.protocol import Embedder
from engram.service.environments import EnvironmentService
from engram.service.memories import MemoryService
from engram.store import Store, open_store


class Engram:
    """One memory system: environments and memories over one store.

    Build it with :meth:`open` at an entry point, or directly with a store in tests.
    """

    def __init__(
        self, store: Store, *, clock: Clock = system_clock, embedder: Embedder | None = None
    ) -> None:
        self.store = store
        self.clock = clock
        # None means keyword-only: no vectors are computed or searched
        self.embedder = embedder
        self.environments = EnvironmentService(store, clock)
        self.memories = MemoryService(store, clock, self.environments)

    @classmethod
    def open(cls, settings: Settings, *, clock: Clock = system_clock) -> Engram:
        return cls(open_store(settings.database_url), clock=clock)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
