"""The one-method embedding contract.

An embedder turns texts into L2-normalised float32 vectors. Everything else Engram does with
vectors (storage, similarity, re-embedding on a model change) is derived from `embed_batch` and
the `model_id` that is stored next to every vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations must be safe to call from several threads."""

    @property
    def model_id(self) -> str:
        """A stable identity of the model and its settings, stored beside each vector."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of each vector."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), dimensions), each row L2-normalised."""
        ...


def in_process(embedder: Embedder) -> bool:
    """Whether ``embedder`` computes here, loaded, at tens of microseconds a text (the static
    model): cheap enough to call while a write holds its lock. A remote embedder, or one not yet
    loaded, is called before."""
    return bool(getattr(embedder, "in_process", False))
