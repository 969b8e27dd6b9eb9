"""Throughput of the bulk path, stage by stage: how many texts a second each part of a bulk
load and of the background indexer handles, beside the way each part was done before (measured
in the same run: on a shared machine only same-run figures compare).

Stages: ingest (``add_many`` in batches of 1000: scrubbing, the rows, FTS, versions, audit),
the tokenizer (``encode_batch`` with offsets, as before, and ``encode_batch_fast``), pooling (a
text at a time, as before, and the whole batch position by position), reading what is pending,
the vector upserts (one statement per vector, as before, and one ``executemany``), and the
indexer end to end at two batch sizes. Wall and CPU time; medians of ``--rounds``.

    python -m bench.indexing [--texts 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench.latency.__main__ import stream, vocabulary
from engram import LOCAL, Engram, NewMemory, Settings
from engram.embeddings.static import StaticEmbedder
from engram.service.indexer import Indexer
from engram.store import EmbeddingUpdate, open_store
from engram.store.sqlite import SQLiteStore

Row = tuple[str, float, float]


def rate(name: str, n: int, fn: Callable[[], object], rounds: int) -> Row:
    """Median texts/s of ``fn`` (n texts a call), by wall and by CPU time."""
    walls, cpus = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(n / max(time.perf_counter() - w, 1e-9))
        cpus.append(n / max(time.process_time() - c, 1e-9))
    return name, statistics.median(walls), statistics.median(cpus)


def pooled_per_text(embedder: StaticEmbedder, texts: Sequence[str]) -> np.ndarray:
    """The previous pooling: one gather and mean per text."""
    out = np.zeros((len(texts), embedder.dimensions), dtype=np.float32)
    for i, rows in enumerate(embedder.token_rows(texts)):
        if rows.size:
            out[i] = embedder._vectors[rows].astype(np.float32).mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def put_one_by_one(store: SQLiteStore, model_id: str, updates: Sequence[EmbeddingUpdate]) -> None:
    """The previous vector upsert: one statement per vector."""
    with store.db.tx() as conn:
        rev = conn.execute(
            "UPDATE store_meta SET value = value + ? WHERE key = 'vector_rev' RETURNING value",
            (len(updates),),
        ).fetchone()[0] - len(updates)
        for u in updates:
            rev += 1
            conn.execute(
                "INSERT OR REPLACE INTO memory_vectors "
                "(memory_seq, model_id, environment_id, content_hash, dim, vector, rev) "
                "SELECT seq, ?, environment_id, ?, ?, ?, ? FROM memories WHERE id = ?",
                (model_id, u.content_hash, len(u.vector), u.vector.tobytes(), rev, u.memory_id),
            )


def each(
    parts: Sequence[Sequence[EmbeddingUpdate]], put: Callable[[Sequence[EmbeddingUpdate]], None]
) -> None:
    for part in parts:
        put(part)


def batches(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model-cache", type=Path, default=None)
    args = parser.parse_args()
    n, rounds = args.texts, args.rounds
    embedder = StaticEmbedder.default(args.model_cache or Settings.load().model_cache)
    texts = list(stream(n, vocabulary(random.Random(n))))
    chunks = batches(texts, 1024)
    tok = embedder._tokenizer
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(str(Path(tmp) / "indexing.db"))
        engram = Engram(store, embedder=embedder)
        engram.environments.create("bulk", LOCAL)

        def ingest() -> None:
            for chunk in batches(texts, 1000):
                engram.memories.add_many([NewMemory(content=t) for t in chunk], LOCAL, "bulk")

        rows.append(rate("ingest, add_many of 1000", n, ingest, 1))
        rows.append(
            rate(
                "tokenize: encode_batch (before)",
                n,
                lambda: [tok.encode_batch(list(c), add_special_tokens=False) for c in chunks],
                rounds,
            )
        )
        rows.append(
            rate(
                "  encode_batch_fast (now)",
                n,
                lambda: [tok.encode_batch_fast(list(c), add_special_tokens=False) for c in chunks],
                rounds,
            )
        )
        rows.append(
            rate(
                "embed: pooled a text at a time (before)",
                n,
                lambda: [pooled_per_text(embedder, c) for c in chunks],
                rounds,
            )
        )
        rows.append(
            rate(
                "  pooled by position (now)",
                n,
                lambda: [embedder.embed_batch(c) for c in chunks],
                rounds,
            )
        )
        inner = getattr(store, "inner", store)
        assert isinstance(inner, SQLiteStore)
        model = embedder.model_id
        pending = store.pending_embeddings(model, limit=n)
        rows.append(
            rate("read pending", n, lambda: store.pending_embeddings(model, limit=n), rounds)
        )
        vectors = embedder.embed_batch([p.text for p in pending])
        updates = [
            EmbeddingUpdate(p.memory_id, p.content_hash, v)
            for p, v in zip(pending, vectors, strict=True)
        ]
        parts = [updates[i : i + 1024] for i in range(0, len(updates), 1024)]
        rows.append(
            rate(
                "vector upserts, one by one (before)",
                n,
                lambda: each(parts, lambda p: put_one_by_one(inner, model, p)),
                rounds,
            )
        )
        rows.append(
            rate(
                "  executemany (now)",
                n,
                lambda: each(parts, lambda p: store.put_embeddings(model, p)),
                rounds,
            )
        )
        for size in (256, 1024):

            def index(size: int = size) -> None:
                inner.prune_embeddings("none")  # every vector gone: all pending again
                Indexer(store, embedder, batch_size=size).run_once()

            rows.append(rate(f"indexer end to end, batches of {size}", n, index, rounds))
        # all embedded now: what one check for a pending memory costs read from the start (the
        # latency bench polled that way while the indexer ran) and from the last position
        last = store.pending_embeddings(model, limit=1, after=0)
        assert not last
        checks = {}
        for name, after in (("from the start", 0), ("from the last position", n - 1)):
            t = time.perf_counter()
            for _ in range(20):
                store.pending_embeddings(model, limit=1, after=after)
            checks[name] = (time.perf_counter() - t) * 1000 / 20
        engram.close()
    print(f"\n== the bulk path, {n:,} texts (median of {rounds}; texts/s)")
    print(f"{'':42} {'wall':>10} {'CPU':>10}")
    for name, wall, cpu in rows:
        print(f"{name:42} {wall:>10,.0f} {cpu:>10,.0f}")
    for name, ms in checks.items():
        print(f"{'a check for pending, ' + name + ' (ms)':42} {ms:>10.2f}")


if __name__ == "__main__":
    main()
