"""Extraction benchmark: the LLM-free extractor over every LoCoMo session, scored against the
LLM-written gold ``observation`` facts of the same session.

    python -m bench.extraction [--data PATH] [--threshold 0.7] [--jaccard] [--examples 0]

Each session is one conversation whose two speakers are both people (role ``user``, author =
speaker), so facts come from both. Reported:

- coverage: share of gold observations matched by some extracted fact of the same session
  (cosine of embeddings >= threshold);
- precision proxy: share of extracted facts matching some gold observation of the session;
- turn overlap: share of gold observations whose source turn (dia_id) yielded a fact;
- chance level: the coverage reached by the facts of a session of *another* conversation,
  which shows what the threshold lets through by accident (the static model's cosines are
  high for any two sentences: 0.9 is where chance falls to about 2 %);
- facts per session; and, as a reference in the same run, the same scores if every turn of
  the session were stored as a "fact" (the ceiling of a turn-level extractor).

The embedder is Engram's default static model (``engram.embeddings.static``); if it cannot be
loaded, or with ``--jaccard``, word-set Jaccard similarity is used instead (and said so).

Part (b), LoCoMo turn recall with extracted facts and episodes indexed beside the raw turns:

    python -m bench.extraction --recall [--data PATH] [--cache DIR]    (bench/extraction/recall.py)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.extraction.common import DEFAULT_DATA, sessions, transcript
from engram.extraction import Proposal, RuleExtractor, Transcript
from engram.models import Layer
from engram.text import content_words

Similarity = Callable[[Sequence[str], Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Session:
    sample_id: str
    transcript: Transcript
    facts: list[Proposal]
    golds: list[tuple[str, str]]

    @property
    def index(self) -> int:
        return int(self.transcript.conversation.id.rsplit("-s", 1)[1]) - 1


def gold(sample: dict[str, Any], n: int) -> list[tuple[str, str]]:
    obs = sample.get("observation", {}).get(f"session_{n}_observation", {})
    out: list[tuple[str, str]] = []
    for items in obs.values():
        for text, dia in items:
            out.append((text, dia if isinstance(dia, str) else str(dia)))
    return out


def jaccard(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    sa = [set(content_words(x)) for x in a]
    sb = [set(content_words(x)) for x in b]
    out = np.zeros((len(sa), len(sb)), dtype=np.float32)
    for i, x in enumerate(sa):
        for j, y in enumerate(sb):
            out[i, j] = len(x & y) / len(x | y) if x | y else 0.0
    return out


def embedding_similarity(cache: Path) -> tuple[Similarity, str]:
    from engram.embeddings.static import StaticEmbedder, ensure_default_static_model

    embedder = StaticEmbedder(ensure_default_static_model(cache))
    memo: dict[str, np.ndarray] = {}

    def vecs(texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in memo]
        if missing:
            for t, v in zip(missing, embedder.embed_batch(missing), strict=True):
                memo[t] = v
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, embedder.dimensions))

    def sim(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        return np.asarray(vecs(a) @ vecs(b).T, dtype=np.float32)

    return sim, f"cosine of {embedder.model_id} embeddings"


def score(sim: Similarity, golds: list[str], facts: list[str], threshold: float) -> tuple[int, int]:
    """(gold observations matched, facts matching some gold)."""
    if not golds or not facts:
        return 0, 0
    m = sim(golds, facts)
    return int((m.max(axis=1) >= threshold).sum()), int((m.max(axis=0) >= threshold).sum())


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--recall" in argv:
        from bench.extraction.recall import main as recall

        recall([a for a in argv if a != "--recall"])
        return
    ap = argparse.ArgumentParser(prog="python -m bench.extraction", description=__doc__)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--threshold", type=float, default=None, help="default 0.9 (Jaccard 0.3)")
    ap.add_argument("--jaccard", action="store_true", help="word-set Jaccard, no embedder")
    ap.add_argument("--cache", type=Path, default=None, help="embedding model cache directory")
    ap.add_argument("--examples", type=int, default=0, help="print N sessions' facts and gold")
    ap.add_argument("--recall", action="store_true", help="part (b) instead: see recall.py")
    args = ap.parse_args(argv)

    sim: Similarity = jaccard
    how = "word-set Jaccard (requested)"
    if not args.jaccard:
        try:
            cache = args.cache or Path(tempfile.gettempdir()) / "engram-bench-models"
            sim, how = embedding_similarity(cache)
        except Exception as exc:  # the embedder is optional here: say so and carry on
            how = f"word-set Jaccard (embedder unavailable: {type(exc).__name__}: {exc})"
    threshold = args.threshold if args.threshold is not None else (0.3 if sim is jaccard else 0.9)
    data = json.loads(args.data.read_text())
    extractor = RuleExtractor()
    started = time.perf_counter()
    runs: list[Session] = []
    for sample in data:
        for n, turns in sessions(sample):
            t = transcript(sample["sample_id"], n, turns)
            facts = [p for p in extractor.extract(t) if p.layer is Layer.FACT]
            runs.append(Session(sample["sample_id"], t, facts, gold(sample, n)))
    n_gold = sum(len(r.golds) for r in runs)
    n_facts = sum(len(r.facts) for r in runs)
    n_turns = sum(len(r.transcript.messages) for r in runs)
    covered = precise = turn_hit = base_cov = base_prec = chance = 0
    kinds: dict[str, int] = {}
    by_conv: dict[str, list[Session]] = {}
    for r in runs:
        by_conv.setdefault(r.sample_id, []).append(r)
    order = list(by_conv)
    for r in runs:
        gold_texts = [g for g, _ in r.golds]
        fact_texts = [f.content for f in r.facts]
        c, p = score(sim, gold_texts, fact_texts, threshold)
        turn_texts = [f"{m.speaker}: {m.content}" for m in r.transcript.messages]
        bc, bp = score(sim, gold_texts, turn_texts, threshold)
        # chance: the same-numbered session of the next conversation (cyclically)
        other = by_conv[order[(order.index(r.sample_id) + 1) % len(order)]]
        twin = other[min(r.index, len(other) - 1)]
        chance += score(sim, gold_texts, [f.content for f in twin.facts], threshold)[0]
        sources = {i for f in r.facts for i in f.source_message_ids}
        covered += c
        precise += p
        base_cov += bc
        base_prec += bp
        turn_hit += sum(1 for _, dia in r.golds if dia in sources)
        for f in r.facts:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
    for r in runs[: args.examples]:
        print(f"--- {r.transcript.conversation.id}: {len(r.facts)} facts, {len(r.golds)} gold")
        for f in r.facts:
            print("  fact:", f.content)
        for g, _ in r.golds:
            print("  gold:", g)
    per_session = [len(r.facts) for r in runs]
    n_sessions = len(runs)
    elapsed = time.perf_counter() - started

    def pct(a: int, b: int) -> str:
        return f"{100 * a / b:.1f}%" if b else "n/a"

    print(f"LoCoMo extraction benchmark: {args.data.name}")
    print(f"sessions {n_sessions}, turns {n_turns}, gold observations {n_gold}")
    print(f"similarity: {how}; match threshold {threshold}")
    print(
        f"extracted facts: {n_facts} ({statistics.mean(per_session):.1f} per session, "
        f"median {statistics.median(per_session):.0f}, max {max(per_session)})"
    )
    print("facts by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    print(f"(a) coverage of gold observations: {pct(covered, n_gold)} ({covered}/{n_gold})")
    print(f"    precision proxy (facts matching a gold observation): {pct(precise, n_facts)}")
    print(f"    gold observations whose source turn yielded a fact: {pct(turn_hit, n_gold)}")
    print(f"    chance level (facts of a session of another conversation): {pct(chance, n_gold)}")
    print(
        f"reference, every turn stored as a fact: coverage {pct(base_cov, n_gold)}, "
        f"precision proxy {pct(base_prec, n_turns)} ({n_turns} 'facts')"
    )
    print(f"extraction + scoring time: {elapsed:.1f} s")


if __name__ == "__main__":
    main()
