"""Embeds memories in the background: new and edited memories are searchable by keyword at once
and semantically as soon as the worker has embedded them (in batches)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from engram import heap
from engram.accounts import Scope
from engram.actors import Actor
from engram.embeddings.protocol import Embedder
from engram.service.environments import require_scope
from engram.store import EmbeddingUpdate, Store

log = logging.getLogger(__name__)

IDLE_SHARE = 10
"""After a pass that found nothing to embed, the next waits this many times its duration
(at most :data:`MAX_IDLE_WAIT` seconds)."""
MAX_IDLE_WAIT = 5.0


@dataclass(frozen=True)
class Reembedded:
    """What :meth:`Indexer.reembed` did."""

    model_id: str
    embedded: int
    """Memories given a vector of ``model_id`` now."""
    pruned: int
    """Vectors of other models deleted (0 without ``prune``)."""
    vectors: dict[str, int]
    """The vectors stored per model id afterwards."""


class Indexer:
    def __init__(self, store: Store, embedder: Embedder, batch_size: int = 256) -> None:
        self._store = store
        self._embedder = embedder
        self._batch = batch_size
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one embedding pass at a time in this process

    @property
    def model_id(self) -> str:
        return self._embedder.model_id

    def run_once(self, max_items: int | None = None) -> int:
        """Embed pending memories now; return how many were embedded. One pass walks the
        store in order from a cursor, so its cost grows with the store only once."""
        done = 0
        with self._lock:
            after = 0
            while max_items is None or done < max_items:
                size = self._batch if max_items is None else min(self._batch, max_items - done)
                pending = self._store.pending_embeddings(self.model_id, limit=size, after=after)
                if not pending:
                    break
                vectors = self._embedder.embed_batch([p.text for p in pending])
                self._store.put_embeddings(
                    self.model_id,
                    [
                        EmbeddingUpdate(p.memory_id, p.content_hash, v)
                        for p, v in zip(pending, vectors, strict=True)
                    ],
                )
                after = pending[-1].position
                done += len(pending)
            if done >= heap.BULK_ROWS:  # the batches' texts, vectors and rows, freed
                heap.give_back()
        return done

    def reembed(self, actor: Actor, *, prune: bool = False) -> Reembedded:
        """Embed every memory lacking a vector of the current model (e.g. after a model
        change), then with ``prune`` delete the vectors of other models. The vectors serve the
        whole server, so this needs the admin scope."""
        require_scope(actor, Scope.ADMIN)
        embedded = self.run_once()
        pruned = self._store.prune_embeddings(self.model_id) if prune else 0
        return Reembedded(self.model_id, embedded, pruned, self._store.embedding_stats())

    def notify(self) -> None:
        """Something was written: wake the worker."""
        self._wake.set()

    def start(self, interval: float = 1.0) -> None:
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            # a pass reads the whole store to find what lacks a vector: skipped while no memory
            # was written since the last one found nothing (by any process on the store), and
            # after a pass that found nothing the next waits ``IDLE_SHARE`` times as long as it
            # took, so that finding nothing costs at most about a tenth of a core
            idle_at: int | None = None
            wait = interval
            while not self._stop.is_set():
                self._wake.wait(wait)
                self._wake.clear()
                try:
                    stamp = self._store.memory_stamp()
                    if stamp == idle_at:
                        continue
                    started = time.monotonic()
                    if self.run_once() == 0:
                        idle_at = stamp
                        took = time.monotonic() - started
                        wait = min(max(interval, IDLE_SHARE * took), MAX_IDLE_WAIT)
                    else:
                        wait = interval
                except Exception:  # keep the worker alive; the next pass retries
                    log.exception("embedding pass failed")

        self._thread = threading.Thread(target=loop, name="engram-indexer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)
        self._thread = None
