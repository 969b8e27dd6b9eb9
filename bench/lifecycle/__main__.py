"""Lifecycle benchmark: a fixed-seed stream of facts with known duplicates, updates and noise,
written through ``LifecycleService.remember``. Reports precision and recall of merges and
supersessions, write throughput, and the time of a full maintenance run, beside a naive baseline
(exact-text dedup, no supersession) measured in the same run. Then the hard stream
(:mod:`bench.lifecycle.hard`: many facts about the same subjects, bundles, change words in
unrelated facts), scored by :mod:`bench.lifecycle.run_hard`.

Then write speed into environments of 10k and 100k facts (:mod:`bench.lifecycle.speed`).

    python -m bench.lifecycle [--n 10000] [--seed 7] [--no-embedder] [--sweep] [--hard-only]
                              [--speed 10000,100000] [--speed-writes 2000] [--speed-only]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.lifecycle.generate import Item, stream
from bench.lifecycle.hard import hard_stream
from bench.lifecycle.run_hard import HEADER, HardScore, run_hard
from bench.lifecycle.speed import HEADER as SPEED_HEADER
from bench.lifecycle.speed import run_speed
from engram import LOCAL, Engram, NewMemory
from engram.embeddings.protocol import Embedder
from engram.lifecycle import MaintenanceReport, WriteAction
from engram.store.sqlite import SQLiteStore

Truth = dict[str, tuple[tuple[str, str] | None, str | None]]  # memory id -> (slot, value)


@dataclass
class Score:
    name: str
    n: int
    dups: int
    updates: int
    seconds: float = 0.0
    merges: int = 0
    good_merges: int = 0
    supersedes: int = 0
    good_supersedes: int = 0
    queued: int = 0
    notes: list[str] = field(default_factory=list)

    def merge(self, item: Item, target: tuple[tuple[str, str] | None, str | None]) -> None:
        self.merges += 1
        self.good_merges += item.kind == "dup" and target == (item.slot, item.value)

    def supersede(self, item: Item, target: tuple[tuple[str, str] | None, str | None]) -> None:
        self.supersedes += 1
        self.good_supersedes += item.kind == "update" and target[0] == item.slot

    def row(self) -> str:
        def pr(good: int, made: int, expected: int) -> str:
            p = good / made if made else 0.0
            r = good / expected if expected else 0.0
            return f"{p:5.3f} / {r:5.3f}"

        rate = self.n / self.seconds if self.seconds else 0.0
        return (
            f"| {self.name:<34} | {rate:8.0f} | {pr(self.good_merges, self.merges, self.dups)} "
            f"| {pr(self.good_supersedes, self.supersedes, self.updates)} | {self.queued:6d} |"
        )


def new_engram(root: Path, name: str, embedder: Embedder | None) -> Engram:
    """A fresh database per mode."""
    slug = "".join(c if c.isalnum() else "-" for c in name)
    return Engram(SQLiteStore(root / f"{slug}.db"), embedder=embedder)


def run_baseline(root: Path, items: list[Item], expected: Counter[str]) -> Score:
    """Exact-text dedup (case and spacing folded) in front of a plain add; no supersession."""
    score = Score("baseline: exact-text dedup", len(items), expected["dup"], expected["update"])
    engram = new_engram(root, "baseline", None)
    seen: dict[str, str] = {}
    truth: Truth = {}
    start = time.perf_counter()
    for item in items:
        key = " ".join(item.text.lower().split())
        if key in seen:
            score.merge(item, truth[seen[key]])
            continue
        memory = engram.memories.add(NewMemory(content=item.text), LOCAL)
        seen[key] = memory.id
        truth[memory.id] = (item.slot, item.value)
    score.seconds = time.perf_counter() - start
    engram.close()
    return score


def run_lifecycle(
    root: Path, name: str, items: list[Item], expected: Counter[str], embedder: Embedder | None
) -> tuple[Score, MaintenanceReport]:
    score = Score(name, len(items), expected["dup"], expected["update"])
    engram = new_engram(root, name, embedder)
    truth: Truth = {}
    start = time.perf_counter()
    for item in items:
        out = engram.lifecycle.remember(NewMemory(content=item.text), LOCAL)
        if out.action is WriteAction.MERGED and out.absorbed_into:
            truth[out.merged_record or ""] = (item.slot, item.value)
            score.merge(item, truth[out.absorbed_into])
            continue
        truth[out.memory.id] = (item.slot, item.value)
        if out.action is WriteAction.SUPERSEDED and out.superseded:
            score.supersede(item, truth[out.superseded])
        elif out.action is WriteAction.QUEUED:
            score.queued += 1
    score.seconds = time.perf_counter() - start
    print(f"  {name}: {len(items)} writes in {score.seconds:.1f} s", flush=True)
    report = engram.lifecycle.maintain(LOCAL)
    print(f"  {name}: maintenance in {report.seconds:.1f} s", flush=True)
    engram.close()
    return score, report


def run_sweep(
    root: Path, items: list[Item], expected: Counter[str], embedder: Embedder | None
) -> tuple[Score, MaintenanceReport]:
    """Plain adds (no lifecycle on write), then one maintenance run does all the work."""
    name = "maintenance only" + (" + static" if embedder else " (keyword)")
    score = Score(name, len(items), expected["dup"], expected["update"])
    engram = new_engram(root, name, embedder)
    truth: Truth = {}
    by_id: dict[str, Item] = {}
    for item in items:
        memory = engram.memories.add(NewMemory(content=item.text), LOCAL)
        truth[memory.id] = (item.slot, item.value)
        by_id[memory.id] = item
    report = engram.lifecycle.maintain(LOCAL)
    for e in report.merged:
        score.merge(by_id[e.memory_id], truth[e.other_id or ""])
    for e in report.superseded:
        score.supersede(by_id[e.other_id or ""], truth[e.memory_id])
    score.queued = len(report.queued)
    score.seconds = report.seconds
    engram.close()
    return score, report


def default_embedder() -> Embedder | None:
    """The default static model, if it can be built here (cached under ENGRAM_MODEL_CACHE)."""
    try:
        from engram.embeddings.static import StaticEmbedder
    except ImportError:
        return None
    cache = Path(os.environ.get("ENGRAM_MODEL_CACHE", ".cache/models"))
    try:
        return StaticEmbedder.default(cache)
    except Exception as exc:  # the model is optional here: report and go on without it
        print(f"(static embedder unavailable: {exc})")
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-embedder", action="store_true")
    parser.add_argument("--sweep", action="store_true", help="also time maintenance-only runs")
    parser.add_argument("--hard-only", action="store_true", help="only the hard stream")
    parser.add_argument(
        "--speed", default="10000,100000", help="environment sizes to time writes into ('' none)"
    )
    parser.add_argument("--speed-writes", type=int, default=2000)
    parser.add_argument("--speed-only", action="store_true", help="only the write speed")
    args = parser.parse_args()
    sizes = [int(x) for x in args.speed.split(",") if x.strip()]
    embedder = None if args.no_embedder else default_embedder()
    if sizes:
        with tempfile.TemporaryDirectory() as tmp:
            speed = [
                run_speed(Path(tmp), size, args.speed_writes, emb)
                for emb in [None] + ([embedder] if embedder is not None else [])
                for size in sizes
            ]
        print()
        print(SPEED_HEADER)
        for s in speed:
            print(s.row())
        print()
    if args.speed_only:
        return
    hard = hard_stream()
    print(f"hard stream: {len(hard)} facts: {dict(Counter(i.kind for i in hard))}", flush=True)
    hard_rows: list[HardScore] = []
    with tempfile.TemporaryDirectory() as tmp:
        for emb in [None] + ([embedder] if embedder is not None else []):
            name = "lifecycle" + (" + static embedder" if emb else ": keyword only")
            hard_rows.append(run_hard(Path(tmp), name, hard, emb))
    print()
    print(HEADER)
    print("|" + "|".join("---" for _ in HEADER.split("|")[1:-1]) + "|")
    for h in hard_rows:
        print(h.row())
    for h in hard_rows:
        for example in h.examples:
            print(f"- {h.name}: {example}")
    if args.hard_only:
        return
    print()

    items = stream(args.n, args.seed)
    expected = Counter(i.kind for i in items)
    print(f"stream: {len(items)} facts, seed {args.seed}: {dict(expected)}", flush=True)

    rows: list[Score] = []
    maint: list[tuple[str, MaintenanceReport]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows.append(run_baseline(root, items, expected))
        score, report = run_lifecycle(root, "lifecycle: keyword only", items, expected, None)
        rows.append(score)
        maint.append((score.name, report))
        if embedder is not None:
            score, report = run_lifecycle(
                root, "lifecycle: + static embedder", items, expected, embedder
            )
            rows.append(score)
            maint.append((score.name, report))
        if args.sweep:
            for emb in [None] + ([embedder] if embedder is not None else []):
                score, report = run_sweep(root, items, expected, emb)
                rows.append(score)
                maint.append((score.name, report))

    print()
    cols = ("mode".ljust(34), "writes/s", "merges P / R ", "supersede P / R", "queued")
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("-" * (len(c) + 2) for c in cols) + "|")
    for row in rows:
        print(row.row())
    print("(maintenance-only rows: writes/s = facts swept per second by one maintenance run)")
    print()
    print("full maintenance run after the stream:")
    for name, r in maint:
        print(
            f"- {name}: {r.seconds:.2f} s for {r.scanned} memories; {len(r.merged)} merged, "
            f"{len(r.superseded)} superseded, {len(r.queued)} queued, {len(r.flagged)} flagged, "
            f"{len(r.compacted)} compacted"
        )


if __name__ == "__main__":
    main()
