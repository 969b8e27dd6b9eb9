"""Any OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio...)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np

from engram.embeddings.protocol import Vectors
from engram.errors import EngramError, InvalidInput


class EmbeddingServiceError(EngramError):
    code = "embedding_service_error"


class OpenAIEmbedder:
    """POSTs to ``{base_url}/embeddings`` (``base_url`` usually ends in ``/v1``)."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidInput(f"embedding endpoint {base_url!r} must be an http(s) URL")
        self._model = model
        self._url = base_url.rstrip("/") + "/embeddings"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._batch = batch_size
        self._dimensions: int | None = None

    @property
    def model_id(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = int(self.embed_batch(["dimension probe"]).shape[1])
        return self._dimensions

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            chunk = list(texts[start : start + self._batch])
            try:
                response = self._client.post(self._url, json={"model": self._model, "input": chunk})
                response.raise_for_status()
                data = sorted(response.json()["data"], key=lambda d: d["index"])
                rows.extend(d["embedding"] for d in data)
            except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                raise EmbeddingServiceError(
                    f"embedding request to {self._url} failed: {exc}"
                ) from exc
        if not rows:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        out = np.asarray(rows, dtype=np.float32)
        self._dimensions = out.shape[1]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
