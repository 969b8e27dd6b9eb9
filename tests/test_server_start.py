"""How ``engram serve`` starts: the REST API answers as soon as it is built, while MCP (and,
with auth, OAuth) are built on a thread once the embedding model is loaded; a request for
them meanwhile waits and then gets its answer (never a 404). The default embedder maps its
matrix from the model file instead of copying it, and embeds exactly as a float32 copy did."""

from __future__ import annotations

import json
import struct
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from safetensors.numpy import load_file

from engram import LOCAL, Engram, NewMemory
from engram.api import ServerSettings
from engram.embeddings.mapped import MappingError, map_tensors
from engram.embeddings.static import StaticEmbedder
from engram.servers import served_app
from engram.store import Store
from tests.live_server import running

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_rest_answers_while_mcp_waits_for_its_build(store: Store) -> None:
    engram = Engram(store)
    engram.environments.ensure_default(LOCAL)
    engram.memories.add(NewMemory(content="Deploys go through the Berlin staging cluster"), LOCAL)
    after = threading.Event()  # the model "still loading": MCP is not built yet
    app = lambda port: served_app(engram, ServerSettings(port=port, auth=False), after)  # noqa: E731
    with running(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        _rest_then_mcp(url, http, after)


def test_mcp_is_built_when_first_asked_for_not_beside_the_first_searches(store: Store) -> None:
    engram = Engram(store)
    engram.environments.ensure_default(LOCAL)
    after = threading.Event()
    after.set()  # the model loaded: only the deferral holds the build back
    served: list[object] = []

    def app(port: int) -> object:
        served.append(served_app(engram, ServerSettings(port=port, auth=False), after, 600))
        return served[0]

    with running(app) as url, httpx.Client(base_url=url, timeout=30) as http:  # type: ignore[arg-type]
        assert http.post("/api/v1/search", json={"query": "Berlin"}).status_code == 200
        time.sleep(1.0)
        mounted = [getattr(r, "path", "") for r in served[0].app.routes]  # type: ignore[attr-defined]
        assert "/mcp" not in mounted  # not built while nobody asked (600 s of deferral left)
        started = time.monotonic()
        answer = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert answer.status_code == 200 and "serverInfo" in answer.text
        assert time.monotonic() - started < 60  # built on the request, not after the deferral
        assert "/mcp" in [getattr(r, "path", "") for r in served[0].app.routes]  # type: ignore[attr-defined]


def _rest_then_mcp(url: str, http: httpx.Client, after: threading.Event) -> None:
    try:
        assert http.get("/healthz").status_code == 200
        found = http.post("/api/v1/search", json={"query": "Berlin", "mode": "keyword"})
        assert found.status_code == 200
        assert [i["memory"]["content"] for i in found.json()["items"]] == [
            "Deploys go through the Berlin staging cluster"
        ]
        answers: list[httpx.Response] = []

        def initialize() -> None:
            with httpx.Client(base_url=url, timeout=30) as other:
                answers.append(other.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS))

        waiting = threading.Thread(target=initialize)
        waiting.start()
        time.sleep(0.5)
        assert answers == []  # held, not answered 404
        after.set()
        waiting.join(timeout=30)
        assert [a.status_code for a in answers] == [200]
        assert "serverInfo" in answers[0].text
        # once built, MCP answers at once and the REST API is unchanged
        again = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert again.status_code == 200
        assert http.post("/api/v1/search", json={"query": "Berlin"}).status_code == 200
        assert http.get("/api/v1/no-such-thing").status_code == 404
    finally:
        after.set()


def test_default_embedder_maps_its_matrix_and_embeds_as_float32(
    default_embedder: StaticEmbedder, model_cache: Path
) -> None:
    model_dir = next(p for p in model_cache.iterdir() if (p / "embeddings.safetensors").is_file())
    matrix = default_embedder._vectors
    assert matrix.dtype == np.float16
    assert not matrix.flags.writeable  # the file's read-only pages, not a private copy
    copied = load_file(str(model_dir / "embeddings.safetensors"))
    widened = copied["embeddings"].astype(np.float32)
    texts = ["Deploys go through the Berlin staging cluster", "the", "", "[UNK] zzqx"]
    got = default_embedder.embed_batch(texts)
    for text, rows, vector in zip(texts, default_embedder.token_rows(texts), got, strict=True):
        expected = widened[rows].mean(axis=0) if rows.size else np.zeros(widened.shape[1])
        norm = float(np.linalg.norm(expected))
        expected = expected / norm if norm > 0 else expected
        assert np.array_equal(vector, expected.astype(np.float32)), text


def _write(path: Path, header: dict[str, object], data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


def test_map_tensors_reads_each_tensor_and_names_what_is_wrong(tmp_path: Path) -> None:
    data = np.arange(6, dtype=np.float16).tobytes() + np.array([7, 8], dtype=np.int32).tobytes()
    header = {
        "__metadata__": {"format": "np"},
        "m": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]},
        "ids": {"dtype": "I32", "shape": [2], "data_offsets": [12, 20]},
    }
    tensors = map_tensors(_write(tmp_path / "ok.safetensors", header, data))
    assert tensors["m"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert tensors["ids"].tolist() == [7, 8]
    bf16 = {"m": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]}}
    with pytest.raises(MappingError, match="'m' has dtype BF16"):
        map_tensors(_write(tmp_path / "bf16.safetensors", bf16, b"\0" * 4))
    short = {"m": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}
    with pytest.raises(MappingError, match="does not fill its byte range"):
        map_tensors(_write(tmp_path / "short.safetensors", short, b"\0" * 8))
    (tmp_path / "junk.safetensors").write_bytes(struct.pack("<Q", 3) + b"{x}")
    with pytest.raises(MappingError, match="not JSON"):
        map_tensors(tmp_path / "junk.safetensors")
    (tmp_path / "tiny.safetensors").write_bytes(b"12")
    with pytest.raises(MappingError, match="too short"):
        map_tensors(tmp_path / "tiny.safetensors")
