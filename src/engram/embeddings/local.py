"""Models in a local directory: model2vec static models (numpy only) or sentence-transformers
models (needs the optional ``sentence-transformers`` package)."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from engram.embeddings.protocol import Embedder, Vectors
from engram.errors import InvalidInput, MissingDependency


class Model2VecDir:
    """A model2vec directory: ``model.safetensors`` (key ``embeddings``) + ``tokenizer.json``."""

    def __init__(self, path: Path) -> None:
        self._vectors = load_file(str(path / "model.safetensors"))["embeddings"].astype(np.float32)
        self._tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._lock = threading.Lock()
        self._id = f"local:{path.name}"

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dimensions(self) -> int:
        return int(self._vectors.shape[1])

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, enc in enumerate(encodings):
            ids = [t for t in enc.ids if t < len(self._vectors)]
            if ids:
                out[i] = self._vectors[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


class SentenceTransformerDir:
    def __init__(self, path: Path) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(path), device="cpu")
        self._id = f"local:{path.name}"

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dimensions(self) -> int:
        return int(self._model.get_sentence_embedding_dimension() or 0)

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)


def load_local_model(path: Path) -> Embedder:
    if not path.is_dir():
        raise InvalidInput(f"embedding model directory {path} does not exist")
    if (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file():
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependency(
                f"{path} is a sentence-transformers model; install it with "
                "'pip install sentence-transformers' (CPU torch: pip install torch==2.13.0)"
            )
        return SentenceTransformerDir(path)
    if (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file():
        config = path / "config.json"
        if config.is_file() and "model_type" in json.loads(config.read_text()):
            raise InvalidInput(f"{path} is a transformer checkpoint, not a model2vec model")
        return Model2VecDir(path)
    raise InvalidInput(
        f"{path} is neither a model2vec model (model.safetensors + tokenizer.json) nor a "
        "sentence-transformers model (modules.json)"
    )
