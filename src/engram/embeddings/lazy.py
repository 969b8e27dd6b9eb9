"""An embedder that loads its model on first use, so commands that never embed stay fast."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from engram.embeddings.protocol import Embedder, Vectors
from engram.embeddings.protocol import in_process as _in_process


class LazyEmbedder:
    def __init__(self, model_id: str, dimensions: int, load: Callable[[], Embedder]) -> None:
        self._model_id = model_id
        self._dimensions = dimensions
        self._load = load
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    @property
    def in_process(self) -> bool:
        """Loaded, and the loaded model computes here (the first call, which loads it, is not)."""
        inner = self._inner
        return inner is not None and _in_process(inner)

    def inner(self) -> Embedder:
        if self._inner is None:
            with self._lock:
                if self._inner is None:
                    self._inner = self._load()
        return self._inner

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        return self.inner().embed_batch(texts)
