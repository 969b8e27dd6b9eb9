"""Write speed into a full environment: the environment is filled with ``size`` facts of the old
stream (plain batched adds), copied once per mode, and the first ``writes`` facts of the hard
stream are then written through
- a plain add (``lifecycle: false``: no dedup, no contradiction), one by one;
- the default write path (dedup and contradiction), one by one;
- the default write path in batches of ``BATCH``.

Keyword-only (the filled facts have no vectors). The default path's time includes building the
candidate index once (after its first few writes), as a server pays it.

Each rate is given twice: writes per second of wall time, and per second of the process's own
CPU time (``time.process_time``), which a machine shared with other work disturbs far less.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from bench.lifecycle.generate import stream
from bench.lifecycle.hard import hard_stream
from engram import LOCAL, Engram, NewMemory
from engram.store.sqlite import SQLiteStore

BATCH = 100


@dataclass
class SpeedRow:
    size: int
    writes: int
    plain: float
    default: float
    batched: float
    plain_cpu: float = 0.0
    default_cpu: float = 0.0
    batched_cpu: float = 0.0

    def row(self) -> str:
        def both(wall: float, cpu: float) -> str:
            return f"{wall:6,.0f} ({cpu:,.0f})"

        return (
            f"| {self.size:>7,} | {self.writes:>6,} | {both(self.plain, self.plain_cpu)} "
            f"| {both(self.default, self.default_cpu)} | {both(self.batched, self.batched_cpu)} |"
        )


HEADER = (
    "| facts in the environment | writes | plain add/s (per CPU s) "
    "| default path/s, one by one | default path/s, batches of 100 |\n|---|---|---|---|---|"
)


def _fill(path: Path, size: int) -> None:
    texts = [i.text for i in stream(size, 11)]
    with Engram(SQLiteStore(path)) as engram:
        for start in range(0, len(texts), 1000):
            chunk = texts[start : start + 1000]
            engram.memories.add_many([NewMemory(content=t) for t in chunk], LOCAL)


def run_speed(root: Path, size: int, writes: int) -> SpeedRow:
    base = root / f"fill-{size}.db"
    started = time.perf_counter()
    _fill(base, size)
    print(f"  filled {size:,} facts in {time.perf_counter() - started:.1f} s", flush=True)
    items = [NewMemory(content=i.text, importance=i.importance) for i in hard_stream()[:writes]]
    rates: dict[str, float] = {}
    cpu: dict[str, float] = {}
    for mode in ("plain", "default", "batched"):
        path = root / f"speed-{size}-{mode}.db"
        shutil.copy(base, path)
        with Engram(SQLiteStore(path)) as engram:
            start, start_cpu = time.perf_counter(), time.process_time()
            if mode == "plain":
                for new in items:
                    exact = new.model_copy(update={"lifecycle": False})
                    engram.lifecycle.remember(exact, LOCAL)
            elif mode == "default":
                for new in items:
                    engram.lifecycle.remember(new, LOCAL)
            else:
                for at in range(0, len(items), BATCH):
                    engram.lifecycle.remember_many(items[at : at + BATCH], LOCAL)
            rates[mode] = len(items) / (time.perf_counter() - start)
            cpu[mode] = len(items) / max(time.process_time() - start_cpu, 1e-9)
        print(f"  {size:,}: {mode} {rates[mode]:.0f}/s ({cpu[mode]:.0f} per CPU s)", flush=True)
    return SpeedRow(
        size,
        writes,
        rates["plain"],
        rates["default"],
        rates["batched"],
        cpu["plain"],
        cpu["default"],
        cpu["batched"],
    )
