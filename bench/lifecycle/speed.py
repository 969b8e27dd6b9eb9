"""Write speed into a full environment: the environment is filled with ``size`` facts of the old
stream (plain batched adds), copied once per mode, and the first ``writes`` facts of the hard
stream are then written through
- a plain add (``lifecycle: false``: no dedup, no contradiction), one by one;
- the default write path (dedup and contradiction), one by one;
- the default write path in batches of ``BATCH``.

Keyword-only (the filled facts have no vectors), and, when the default static embedder is
available, again with it (the filled facts embedded first, as the background indexer leaves
them; each write embeds what it keeps or looks up by meaning and stores its vector; the store's
in-memory copy of the vectors is loaded before the clock starts, as a server loads it at
start). The default path's time includes building the candidate index once (after its first
few writes), as a server pays it.

Each rate is given twice: writes per second of wall time, and (in brackets) per second of the
process's own CPU time (``time.process_time``), which a machine shared with other work disturbs
far less. The one-by-one default path is also timed over the second half of its writes alone,
once the index is built (as a server that has been up a while runs).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from bench.lifecycle.generate import stream
from bench.lifecycle.hard import hard_stream
from engram import LOCAL, Engram, MemoryFilter, NewMemory
from engram.embeddings.protocol import Embedder
from engram.models import Layer
from engram.store.sqlite import SQLiteStore

BATCH = 100


@dataclass(frozen=True)
class Rate:
    wall: float
    """Writes per second of wall time."""
    cpu: float
    """Writes per second of this process's CPU time."""

    def show(self) -> str:
        return f"{self.wall:6,.0f} ({self.cpu:,.0f})"


class _Clock:
    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def rate(self, n: int) -> Rate:
        wall, cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu
        return Rate(n / max(wall, 1e-9), n / max(cpu, 1e-9))


@dataclass
class SpeedRow:
    size: int
    mode: str
    writes: int
    plain: Rate
    default: Rate
    warm: Rate
    """The default path over the second half of its writes (the index built by then)."""
    batched: Rate

    def row(self) -> str:
        rates = (self.plain, self.default, self.warm, self.batched)
        return (
            f"| {self.size:>7,} | {self.mode:<15} | {self.writes:>6,} | "
            + " | ".join(r.show() for r in rates)
            + " |"
        )


HEADER = (
    "| facts in the environment | mode | writes | plain add/s (per CPU s) "
    "| default path/s, one by one | the same, second half | default path/s, batches of 100 |"
    "\n|---|---|---|---|---|---|---|"
)


def _fill(path: Path, size: int, embedder: Embedder | None) -> None:
    texts = [i.text for i in stream(size, 11)]
    with Engram(SQLiteStore(path), embedder=embedder) as engram:
        for start in range(0, len(texts), 1000):
            chunk = texts[start : start + 1000]
            engram.memories.add_many([NewMemory(content=t) for t in chunk], LOCAL)
        while engram.index_pending(5000):  # every fact embedded, as the indexer leaves them
            pass


def _load_vector_copy(engram: Engram, embedder: Embedder) -> None:
    """Load the store's in-memory copy of the vectors before the clock starts, as a server has
    it from its start (its first semantic search); the candidate index is not built here."""
    env = engram.environments.ensure_default(LOCAL)
    flt = MemoryFilter(environment_ids=[env.id], layers=[Layer.FACT])
    engram.store.vector_search(embedder.embed_batch(["warm"])[0], embedder.model_id, flt, limit=1)


def run_speed(root: Path, size: int, writes: int, embedder: Embedder | None = None) -> SpeedRow:
    mode_name = "static embedder" if embedder is not None else "keyword only"
    base = root / f"fill-{size}-{embedder is not None}.db"
    started = time.perf_counter()
    _fill(base, size, embedder)
    print(
        f"  filled {size:,} facts in {time.perf_counter() - started:.1f} s ({mode_name})",
        flush=True,
    )
    items = [NewMemory(content=i.text, importance=i.importance) for i in hard_stream()[:writes]]
    rates: dict[str, Rate] = {}
    for mode in ("plain", "default", "batched"):
        path = root / f"speed-{size}-{mode}-{embedder is not None}.db"
        shutil.copy(base, path)
        with Engram(SQLiteStore(path), embedder=embedder) as engram:
            if embedder is not None:
                _load_vector_copy(engram, embedder)
            clock = _Clock()
            if mode == "plain":
                for new in items:
                    exact = new.model_copy(update={"lifecycle": False})
                    engram.lifecycle.remember(exact, LOCAL)
            elif mode == "default":
                half = len(items) // 2
                for at, new in enumerate(items):
                    if at == half:
                        second = _Clock()
                    engram.lifecycle.remember(new, LOCAL)
                rates["warm"] = second.rate(len(items) - half)
            else:
                for at in range(0, len(items), BATCH):
                    engram.lifecycle.remember_many(items[at : at + BATCH], LOCAL)
            rates[mode] = clock.rate(len(items))
        print(f"  {size:,} ({mode_name}): {mode} {rates[mode].show()}/s", flush=True)
        path.unlink()
    base.unlink()
    return SpeedRow(
        size, mode_name, writes, rates["plain"], rates["default"], rates["warm"], rates["batched"]
    )
