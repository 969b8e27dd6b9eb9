"""The embedding model, prepared ahead of use: the default one is distilled once (about 75 s
on a fresh machine) into the model cache, during ``engram setup`` or ``engram init`` rather
than inside the first MCP tool call (a client gave up after 67 s)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from engram.embeddings import load_embedder


@dataclass(frozen=True)
class ModelState:
    spec: str
    ready: bool
    detail: str


def state(spec: str, cache: Path) -> ModelState:
    """Whether the embedder named by ``spec`` can answer without preparing anything first."""
    spec = spec.strip() or "default"
    if spec in ("none", "keyword"):
        return ModelState(spec, True, "no embedder (keyword search only)")
    if spec == "default":
        from engram.embeddings.static import default_model_dir, is_prepared

        directory = default_model_dir(cache)
        if is_prepared(cache):
            return ModelState(spec, True, f"default model in {directory}")
        return ModelState(spec, False, f"default model not prepared yet ({directory})")
    return ModelState(spec, True, f"{spec} (loaded on first use)")


def prepare(spec: str, cache: Path, api_key: str | None = None) -> tuple[ModelState, float]:
    """Load (for the default model: distill once) the embedder and embed one text; the state
    and the seconds it took."""
    started = time.perf_counter()
    embedder = load_embedder(spec or "default", cache, api_key)
    if embedder is None:
        return state(spec, cache), 0.0
    embedder.embed_batch(["ready"])
    took = time.perf_counter() - started
    return ModelState(spec, True, f"{embedder.model_id} ready"), took
