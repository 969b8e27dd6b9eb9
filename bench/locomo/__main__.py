"""LoCoMo retrieval: every turn a memory, every question a search; where do the evidence turns
land? Reports turn recall@5/@10, all-evidence@10, session recall@10 and NDCG@10 for keyword,
semantic, hybrid and the full five-factor ranking, beside plain BM25 on the same data, then
each system's recall@10 per question category and per conversation (a change to ranking should
be read on both: the dev split has 760 questions, and ±0.003 overall is one conversation's noise).
"hybrid, streams only" leaves out the author, thread and time signals (retrieval/provenance.py,
retrieval/when.py).

    python -m bench.locomo [--data PATH] [--categories 1,2,3,4]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from bench.locomo.data import DEFAULT_PATH, Conversation, load
from engram import LOCAL, Engram, NewMemory, Settings
from engram.embeddings import load_embedder
from engram.retrieval.models import SearchMode
from engram.retrieval.scoring import FactorWeights, LayerScoring, ScoringConfig
from engram.store import open_store

K = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def ingest(engram: Engram, conv: Conversation, env: str, with_context: bool) -> None:
    engram.environments.create(env, LOCAL)
    by_session: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(conv.turns):
        by_session[t.session].append(i)
    for idxs in by_session.values():
        items = []
        for pos, i in enumerate(idxs):
            t = conv.turns[i]
            neighbours = []
            if with_context and pos > 0:
                neighbours.append(conv.turns[idxs[pos - 1]].text)
            if with_context and pos + 1 < len(idxs):
                neighbours.append(conv.turns[idxs[pos + 1]].text)
            items.append(
                NewMemory(
                    content=t.text,
                    created_at=t.at,
                    metadata={"dia_id": t.dia_id, "session": t.session},
                    keyword_context="\n".join(neighbours),
                    # the plain baseline gets the turn alone: no speaker, session or neighbours
                    author=t.speaker if with_context else None,
                    thread=f"session-{t.session}" if with_context else None,
                )
            )
        engram.memories.add_many(items, LOCAL, env)


def metrics(ranked: list[str], evidence: tuple[str, ...]) -> dict[str, float]:
    ev = set(evidence)
    top5, top10 = ranked[:5], ranked[:K]
    sessions_ev = {e.split(":")[0] for e in ev}
    sessions_top: list[str] = []
    for d in ranked:
        s = d.split(":")[0]
        if s not in sessions_top:
            sessions_top.append(s)
        if len(sessions_top) == K:
            break
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(top10) if d in ev)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(ev), K)))
    return {
        "R@5": len(ev & set(top5)) / len(ev),
        "R@10": len(ev & set(top10)) / len(ev),
        "all@10": float(ev <= set(top10)),
        "sessR@10": len(sessions_ev & set(sessions_top)) / len(sessions_ev),
        "NDCG@10": dcg / idcg,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--categories", default="1,2,3,4")
    parser.add_argument("--model-cache", type=Path, default=None)
    parser.add_argument("--candidates", type=int, default=None, help="per-stream candidate pool")
    parser.add_argument(
        "--keyword-weight", type=float, default=None, help="share of BM25 in hybrid relevance"
    )
    args = parser.parse_args()
    cats = {int(c) for c in args.categories.split(",")}
    convs = load(args.data)
    settings = Settings.load()
    cache = args.model_cache or settings.model_cache
    embedder = load_embedder("default", cache)
    assert embedder is not None
    with tempfile.TemporaryDirectory() as tmp:
        last = max(t.at for c in convs for t in c.turns)
        now = last + timedelta(days=1)

        def clock() -> datetime:
            return now

        engram = Engram(open_store(Path(tmp) / "locomo.db"), clock=clock, embedder=embedder)
        # the plain baseline in a store of its own: its turns would otherwise count in the
        # measured index's BM25 statistics (every word's document frequency)
        plain = Engram(open_store(Path(tmp) / "plain.db"), clock=clock)
        if args.candidates:
            engram.search._candidates = args.candidates
        if args.keyword_weight is not None:
            engram.search.scoring = replace(
                engram.search.scoring,
                keyword_weight=args.keyword_weight,
                semantic_weight=1 - args.keyword_weight,
            )
        five_factor = engram.search.scoring
        # the single-stream rows rank by relevance alone: every other factor weighs 0
        only = LayerScoring(weights=FactorWeights(1.0, 0.0, 0.0, 0.0, 0.0))
        relevance_only = ScoringConfig(
            fact=only,
            episode=only,
            procedure=only,
            keyword_weight=five_factor.keyword_weight,
            semantic_weight=five_factor.semantic_weight,
        )
        t0 = time.perf_counter()
        for conv in convs:
            ingest(engram, conv, conv.sample_id.lower(), with_context=True)
            ingest(plain, conv, conv.sample_id.lower(), with_context=False)
        t_ingest = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedded = engram.index_pending()
        t_embed = time.perf_counter() - t0
        n_turns = sum(len(c.turns) for c in convs)
        print(
            f"ingested {2 * n_turns} memories in {t_ingest:.1f}s; "
            f"embedded {embedded} in {t_embed:.1f}s"
        )

        # ablation: the streams' relevance alone, without the author, thread and time signals
        streams_only = replace(
            relevance_only, author_weight=0.0, thread_weight=0.0, time_weight=0.0
        )
        configs = {"relevance": relevance_only, "streams": streams_only, "score": five_factor}

        def ranking(
            env: str, q: str, mode: SearchMode, by: str, within: Engram = engram
        ) -> list[str]:
            within.search.scoring = configs[by]
            items = within.search.search(
                q, LOCAL, environment=env, mode=mode, limit=K, count_access=False
            ).items
            return [str(s.memory.metadata["dia_id"]) for s in items]

        systems: dict[str, Callable[[Conversation, str], list[str]]] = {
            "plain BM25 (baseline)": lambda c, q: ranking(
                c.sample_id.lower(), q, SearchMode.KEYWORD, "relevance", plain
            ),
            "keyword": lambda c, q: ranking(
                c.sample_id.lower(), q, SearchMode.KEYWORD, "relevance"
            ),
            "semantic": lambda c, q: ranking(
                c.sample_id.lower(), q, SearchMode.SEMANTIC, "relevance"
            ),
            "hybrid, streams only": lambda c, q: ranking(
                c.sample_id.lower(), q, SearchMode.HYBRID, "streams"
            ),
            "hybrid": lambda c, q: ranking(c.sample_id.lower(), q, SearchMode.HYBRID, "relevance"),
            "hybrid, five-factor": lambda c, q: ranking(
                c.sample_id.lower(), q, SearchMode.HYBRID, "score"
            ),
        }
        print(f"\nLoCoMo {args.data.name}: {len(convs)} conversations, categories {sorted(cats)}")
        cols = ("R@5", "R@10", "all@10", "sessR@10", "NDCG@10")
        header = f"{'system':24} {'n':>5} " + " ".join(f"{c:>8}" for c in cols) + f" {'ms/q':>6}"
        print(header)
        print("-" * len(header))
        # recall@10 of each system per category and per conversation
        groups: dict[str, dict[str, list[float]]] = {}
        for name, fn in systems.items():
            sums: dict[str, float] = defaultdict(float)
            by_group: dict[str, list[float]] = defaultdict(list)
            n = 0
            t0 = time.perf_counter()
            for conv in convs:
                for q in conv.questions:
                    if q.category not in cats:
                        continue
                    found = metrics(fn(conv, q.question), q.evidence)
                    for k, v in found.items():
                        sums[k] += v
                    by_group[category_name(q.category)].append(found["R@10"])
                    by_group[conv.sample_id].append(found["R@10"])
                    n += 1
            ms = (time.perf_counter() - t0) * 1000 / max(n, 1)
            figures = " ".join(f"{sums[c] / n:8.3f}" for c in cols)
            print(f"{name:24} {n:5d} {figures} {ms:6.1f}")
            groups[name] = by_group
        keys = [category_name(c) for c in sorted(cats)] + [c.sample_id for c in convs]
        print_groups(groups, keys)
        engram.close()
        plain.close()


def category_name(category: int) -> str:
    return CATEGORIES.get(category, f"category {category}")


def print_groups(groups: dict[str, dict[str, list[float]]], keys: list[str]) -> None:
    """Recall@10 per category and per conversation (``keys``), one row per system."""
    header = f"\n{'recall@10 by':24} " + " ".join(f"{k[:11]:>11}" for k in keys)
    print(header)
    print("-" * len(header.strip()))
    for name, by_group in groups.items():
        row = " ".join(
            f"{sum(by_group[k]) / len(by_group[k]):11.3f}" if by_group[k] else f"{'-':>11}"
            for k in keys
        )
        print(f"{name:24} {row}")


if __name__ == "__main__":
    main()
