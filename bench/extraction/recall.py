"""Part (b) of the extraction benchmark: does indexing what the LLM-free extractor proposes
beside the raw LoCoMo turns help retrieval?

    python -m bench.extraction --recall [--data PATH] [--cache DIR]

For each conversation, two environments in one store, in the same run:

- ``turns``: every turn a memory, exactly as ``bench.locomo`` ingests them (neighbouring turns
  as keyword context);
- ``turns + extracted``: the same turns, plus the facts and the episode the ``RuleExtractor``
  proposes for each session (procedures are not indexed). Each extracted memory carries in its
  metadata the dia_ids of the turns it was read from (for the episode: the turns of its summary
  sentences).

Every question with evidence is a hybrid search ranked by relevance alone (as ``bench.locomo``'s
"hybrid" row), top 10 items. An extracted memory among the items counts as retrieving the turns
it came from, so ten items can name more than ten turns: ``turns@10`` says how many distinct
turns the ten items name on average, and ``R@10t`` is the recall of the first ten distinct turns
only (a same-budget view). Reported per category 1-4, for 1-4 together (the headline, as in
``bench.locomo``) and for all categories (5 is adversarial).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bench.extraction.common import DEFAULT_DATA, sessions, transcript
from bench.locomo.__main__ import ingest
from bench.locomo.data import Conversation, load
from engram import LOCAL, Engram, NewMemory
from engram.embeddings import load_embedder
from engram.extraction import RuleExtractor
from engram.models import Layer, Memory
from engram.retrieval.models import SearchMode
from engram.retrieval.scoring import FactorWeights, LayerScoring, ScoringConfig
from engram.store import open_store

K = 10
DEFAULT_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "models"
COLUMNS = ("R@5", "R@10", "all@10", "R@10t", "turns@10", "x@10")
INDEXED = (Layer.FACT, Layer.EPISODE)


def extracted(
    sample: dict[str, Any], conv: Conversation, extractor: RuleExtractor, counts: dict[str, int]
) -> list[list[NewMemory]]:
    """The facts and episode proposed for each session, as memories naming their turns."""
    turn_ids = {t.dia_id for t in conv.turns}
    session_time = {t.session: t.at for t in conv.turns}
    out = []
    for n, turns in sessions(sample):
        script = transcript(conv.sample_id, n, turns)
        # message ids are the turns' dia_ids; map them explicitly all the same
        dia_of = {m.id: t["dia_id"] for m, t in zip(script.messages, turns, strict=True)}
        items = []
        for p in extractor.extract(script):
            if p.layer not in INDEXED:
                counts[f"{p.layer} (not indexed)"] += 1
                continue
            dia_ids = [dia_of[i] for i in p.source_message_ids if dia_of.get(i) in turn_ids]
            if not dia_ids:
                counts["without a known source turn (skipped)"] += 1
                continue
            memory = p.to_new_memory(script.conversation.id)
            items.append(
                memory.model_copy(
                    update={
                        "metadata": {**memory.metadata, "dia_ids": dia_ids, "session": n},
                        "created_at": session_time.get(n),
                    }
                )
            )
            counts[str(p.layer)] += 1
        if items:
            out.append(items)
    return out


def turns_of(memory: Memory) -> list[str]:
    meta = memory.metadata
    return [str(meta["dia_id"])] if "dia_id" in meta else [str(d) for d in meta["dia_ids"]]


def measure(items: Sequence[Memory], evidence: Sequence[str]) -> dict[str, float]:
    ev = set(evidence)
    named = [turns_of(m) for m in items]
    top5 = {d for ds in named[:5] for d in ds}
    top10 = {d for ds in named[:K] for d in ds}
    first10 = list(dict.fromkeys(d for ds in named for d in ds))[:K]
    return {
        "R@5": len(ev & top5) / len(ev),
        "R@10": len(ev & top10) / len(ev),
        "all@10": float(ev <= top10),
        "R@10t": len(ev & set(first10)) / len(ev),
        "turns@10": float(len(top10)),
        "x@10": float(sum(1 for m in items[:K] if "dia_id" not in m.metadata)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.extraction --recall", description=__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cache", type=Path, default=None, help="embedding model cache directory")
    args = ap.parse_args(argv)
    cache = args.cache or Path(os.environ.get("ENGRAM_MODEL_CACHE") or DEFAULT_CACHE)
    embedder = load_embedder("default", cache)
    assert embedder is not None
    convs = load(args.data)
    samples = {s["sample_id"]: s for s in json.loads(args.data.read_text())}
    extractor = RuleExtractor()
    counts: dict[str, int] = defaultdict(int)
    with tempfile.TemporaryDirectory() as tmp:
        now = max(t.at for c in convs for t in c.turns) + timedelta(days=1)

        def clock() -> datetime:
            return now

        engram = Engram(open_store(Path(tmp) / "recall.db"), clock=clock, embedder=embedder)
        base = engram.search.scoring

        # relevance only, built as bench.locomo builds it: every other factor weighs 0
        def relevance() -> LayerScoring:
            return LayerScoring(weights=FactorWeights(1.0, 0.0, 0.0, 0.0, 0.0))

        engram.search.scoring = ScoringConfig(
            fact=relevance(),
            episode=relevance(),
            procedure=relevance(),
            keyword_weight=base.keyword_weight,
            semantic_weight=base.semantic_weight,
        )
        t0 = time.perf_counter()
        envs = {"turns": "", "turns + extracted": "-x"}
        for conv in convs:
            for suffix in envs.values():
                ingest(engram, conv, conv.sample_id.lower() + suffix, with_context=True)
            for batch in extracted(samples[conv.sample_id], conv, extractor, counts):
                engram.memories.add_many(batch, LOCAL, conv.sample_id.lower() + "-x")
        t_ingest = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedded = engram.index_pending()
        t_embed = time.perf_counter() - t0

        groups = {f"cat {c}": {c} for c in (1, 2, 3, 4)}
        groups["cat 1-4"] = {1, 2, 3, 4}
        groups["all"] = {q.category for c in convs for q in c.questions}
        sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        n: dict[str, int] = defaultdict(int)
        t0 = time.perf_counter()
        for conv in convs:
            for q in conv.questions:
                for system, suffix in envs.items():
                    items = engram.search.search(
                        q.question,
                        LOCAL,
                        environment=conv.sample_id.lower() + suffix,
                        mode=SearchMode.HYBRID,
                        limit=K,
                        count_access=False,
                    ).items
                    scores = measure([s.memory for s in items], q.evidence)
                    for group, cats in groups.items():
                        if q.category in cats:
                            for col, v in scores.items():
                                sums[group, system][col] += v
                for group, cats in groups.items():
                    n[group] += q.category in cats
        t_query = time.perf_counter() - t0
        engram.close()

    n_turns = sum(len(c.turns) for c in convs)
    n_added = counts[str(Layer.FACT)] + counts[str(Layer.EPISODE)]
    print(f"LoCoMo {args.data.name}: {len(convs)} conversations, {n_turns} turns")
    print(
        f"extracted memories added beside the turns: {n_added} "
        f"({counts[str(Layer.FACT)]} facts, {counts[str(Layer.EPISODE)]} episodes)"
    )
    others = {k: v for k, v in counts.items() if k not in (str(Layer.FACT), str(Layer.EPISODE))}
    if others:
        print("left out: " + ", ".join(f"{v} {k}" for k, v in sorted(others.items())))
    print(
        f"ingested in {t_ingest:.1f}s, embedded {embedded} in {t_embed:.1f}s, "
        f"{n['all']} questions x 2 environments searched in {t_query:.1f}s"
    )
    print(f"hybrid search, relevance only, top {K} items; an extracted item counts as its turns\n")
    header = f"{'questions':10} {'n':>4} {'system':18} " + " ".join(f"{c:>8}" for c in COLUMNS)
    print(header)
    print("-" * len(header))
    for group in groups:
        for system in envs:
            row = sums[group, system]
            figures = " ".join(f"{row[c] / max(n[group], 1):8.3f}" for c in COLUMNS)
            print(f"{group:10} {n[group]:4d} {system:18} {figures}")


if __name__ == "__main__":
    main()
