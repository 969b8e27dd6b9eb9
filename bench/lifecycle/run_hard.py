"""Scoring the hard stream (:mod:`bench.lifecycle.hard`) written through ``remember``.

- merge precision / recall: a merge is right when the fact that absorbed the new one states
  each of its slots with the same value (a ``dup``, or an update back to a value an active fact
  holds); recall: ``dup`` items rightly merged, over the ``dup`` items;
- supersede precision / recall: a supersede is right when the new fact gives every slot of the
  superseded one another value (so a bundle is never rightly superseded by a one-slot fact);
  recall: updates that superseded their slot's fact, over the updates whose slot was held by a
  single-claim fact (an update of a bundle should be queued);
- wrongly hidden: memories a wrong merge or supersede took out of search, by importance band;
- the review queue: its size and the share of queued pairs that are real conflicts (the two
  facts state the same slot with different values);
- writes/s through ``remember`` and through a plain ``memories.add`` in the same run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.lifecycle.hard import Item
from engram import LOCAL, Engram, NewMemory
from engram.embeddings.protocol import Embedder
from engram.lifecycle import WriteAction
from engram.store.sqlite import SQLiteStore

EXAMPLES = 5
BANDS = ((0.8, "≥ 0.8"), (0.5, "0.5–0.8"), (0.0, "< 0.5"))


def band(importance: float) -> str:
    return next(name for low, name in BANDS if importance >= low)


@dataclass
class HardScore:
    name: str
    n: int
    plain_rate: float = 0.0
    rate: float = 0.0
    merges: int = 0
    good_merges: int = 0
    dup_merges: int = 0
    dups: int = 0
    supersedes: int = 0
    good_supersedes: int = 0
    update_supersedes: int = 0
    updates: int = 0
    bundle_updates: int = 0
    bundle_updates_queued: int = 0
    queued: int = 0
    queued_real: int = 0
    hidden: dict[str, int] = field(default_factory=lambda: {name: 0 for _, name in BANDS})
    examples: list[str] = field(default_factory=list)

    def row(self) -> str:
        def pr(good: int, made: int, expected: int, found: int | None = None) -> str:
            p = f"{good / made:5.3f}" if made else "  –  "
            hit = good if found is None else found
            return f"{p} / {hit / expected if expected else 0.0:5.3f}"

        hidden = " / ".join(str(self.hidden[name]) for _, name in BANDS)
        real = f"{self.queued_real / self.queued:4.2f}" if self.queued else " – "
        return (
            f"| {self.name:<28} | {self.rate:6.0f} | {self.plain_rate:6.0f} "
            f"| {pr(self.good_merges, self.merges, self.dups, self.dup_merges)} "
            f"| {pr(self.good_supersedes, self.supersedes, self.updates, self.update_supersedes)} "
            f"| {hidden} | {self.queued:5d} ({real}) "
            f"| {self.bundle_updates_queued}/{self.bundle_updates} |"
        )


def _hide(score: HardScore, hidden: Item, why: str) -> None:
    score.hidden[band(hidden.importance)] += 1
    if len(score.examples) < EXAMPLES:
        score.examples.append(f"{why}: {hidden.text!r}")


def run_hard(root: Path, name: str, items: list[Item], embedder: Embedder | None) -> HardScore:
    score = HardScore(name, len(items))
    slug = "".join(c if c.isalnum() else "-" for c in name)
    plain = Engram(SQLiteStore(root / f"{slug}-plain.db"), embedder=embedder)
    start = time.perf_counter()
    for item in items:
        plain.memories.add(NewMemory(content=item.text, importance=item.importance), LOCAL)
    score.plain_rate = len(items) / (time.perf_counter() - start)
    plain.close()

    engram = Engram(SQLiteStore(root / f"{slug}.db"), embedder=embedder)
    by_id: dict[str, Item] = {}
    for item in items:
        score.dups += item.kind == "dup"
        if item.kind == "update" and item.holder is not None:
            if item.holder.kind == "bundle":
                score.bundle_updates += 1
            else:
                score.updates += 1
    start = time.perf_counter()
    for item in items:
        out = engram.lifecycle.remember(
            NewMemory(content=item.text, importance=item.importance), LOCAL
        )
        by_id[out.merged_record or out.memory.id] = item
        if out.action is WriteAction.MERGED and out.absorbed_into:
            score.merges += 1
            target = by_id[out.absorbed_into]
            if item.slots and all(target.slots.get(k) == v for k, v in item.slots.items()):
                score.good_merges += 1
                score.dup_merges += item.kind == "dup"
            else:
                _hide(score, item, f"merged into {target.text!r}")
        elif out.action is WriteAction.SUPERSEDED and out.superseded:
            score.supersedes += 1
            old = by_id[out.superseded]
            if old.slots and all(
                k in item.slots and item.slots[k] != v for k, v in old.slots.items()
            ):
                score.good_supersedes += 1
                score.update_supersedes += item.kind == "update"
            else:
                _hide(score, old, f"superseded by {item.text!r}")
        elif out.action is WriteAction.QUEUED:
            score.queued += 1
            review = engram.store.reviews.get_review(out.review_id or "")
            other = None if review is None else by_id.get(review.other_id)
            if other is not None and any(
                s in other.slots and other.slots[s] != v for s, v in item.slots.items()
            ):
                score.queued_real += 1
            if item.kind == "update" and item.holder is not None and item.holder.kind == "bundle":
                score.bundle_updates_queued += 1
    score.rate = len(items) / (time.perf_counter() - start)
    engram.close()
    print(f"  {name}: {len(items)} writes at {score.rate:.0f}/s", flush=True)
    return score


HEADER = (
    "| hard stream                  | writes/s | plain add/s | merges P / R | "
    "supersede P / R | wrongly hidden ≥0.8 / 0.5–0.8 / <0.5 | queued (real share) | "
    "bundle updates queued |"
)
