"""LoCoMo end to end: does the context sent to the model hold the evidence?

Each session of each conversation is delivered through the service call behind
``POST /api/v1/extract`` (messages stored, memories extracted through the lifecycle); then, for
every question of categories 1-4, ``assemble_context`` runs at each budget. Reported per
category and overall: evidence coverage (share of the evidence turns covered by the packed
items: a message covers itself, an extracted memory the messages it names in
``source_message_ids``), whether the gold answer appears in the context text, tokens used, and
assemble p50/p95. Beside it, in the same run: (a) every turn stored as a memory (what
``bench.locomo`` measures) with the same assembly, and (b) plain BM25 top turns packed into the
same budget.

    python -m bench.evidence [--data PATH] [--budgets 1000,2000,4000] [--categories 1,2,3,4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from bench.locomo.__main__ import ingest
from bench.locomo.data import DEFAULT_PATH, Conversation, Question, load
from engram import LOCAL, Engram, Settings
from engram.embeddings import load_embedder
from engram.extraction.conversation import NewConversation, NewMessage, Speaker
from engram.extraction.results import ConversationInput
from engram.models import MemoryFilter
from engram.retrieval.models import AssembledContext
from engram.store import open_store
from engram.tokens import count_tokens

Packed = tuple[str, set[str], int, float]
"""The context text, the evidence turns it covers, its tokens, and the milliseconds it took."""


@dataclass
class Tally:
    n: int = 0
    coverage: float = 0.0
    answer: float = 0.0
    tokens: float = 0.0
    ms: list[float] = field(default_factory=list)

    def add(self, q: Question, packed: Packed) -> None:
        text, covered, tokens, ms = packed
        self.n += 1
        self.coverage += len(covered & set(q.evidence)) / len(q.evidence)
        self.answer += float(bool(q.answer) and q.answer.casefold() in text.casefold())
        self.tokens += tokens
        self.ms.append(ms)

    def row(self) -> str:
        p95 = statistics.quantiles(self.ms, n=20)[-1] if len(self.ms) > 1 else self.ms[0]
        return (
            f"{self.n:5d} {self.coverage / self.n:9.3f} {self.answer / self.n:7.3f} "
            f"{self.tokens / self.n:7.0f} {statistics.median(self.ms):6.1f} {p95:6.1f}"
        )


def deliver(engram: Engram, conv: Conversation, env: str) -> dict[str, str]:
    """Each session as one conversation through the /extract service call; returns message id
    → LoCoMo turn id."""
    engram.environments.create(env, LOCAL)
    sessions: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(conv.turns):
        sessions[t.session].append(i)
    dia: dict[str, str] = {}
    for session, idxs in sessions.items():
        turns = [conv.turns[i] for i in idxs]
        data = ConversationInput(
            conversation=NewConversation(
                id=f"{env}-s{session}", source="import", started_at=turns[0].at
            ),
            messages=[
                NewMessage(
                    role=Speaker.USER,
                    author=t.speaker,
                    content=t.said,
                    created_at=t.at,
                    external_id=t.dia_id,
                )
                for t in turns
            ],
        )
        result = engram.extraction.extract(data, LOCAL, env)
        assert result.conversation_id is not None
        for m in engram.extraction.conversations.messages(result.conversation_id):
            dia[m.id] = m.external_id or ""
    return dia


def covered_by(ctx: AssembledContext, dia: dict[str, str], by_memory: dict[str, str]) -> set[str]:
    out: set[str] = set()
    for tier in ctx.tiers:
        for item in tier.items:
            out.update(dia[s] for s in item.sources if s in dia)
            if item.memory_id in by_memory:
                out.add(by_memory[item.memory_id])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--categories", default="1,2,3,4")
    parser.add_argument("--budgets", default="1000,2000,4000")
    parser.add_argument("--model-cache", type=Path, default=None)
    args = parser.parse_args()
    cats = {int(c) for c in args.categories.split(",")}
    budgets = [int(b) for b in args.budgets.split(",")]
    convs = load(args.data)
    embedder = load_embedder("default", args.model_cache or Settings.load().model_cache)
    assert embedder is not None
    with tempfile.TemporaryDirectory() as tmp:
        now = max(t.at for c in convs for t in c.turns) + timedelta(days=1)

        def clock() -> datetime:
            return now

        engram = Engram(open_store(Path(tmp) / "evidence.db"), clock=clock, embedder=embedder)
        t0 = time.perf_counter()
        dia: dict[str, str] = {}
        for conv in convs:
            dia.update(deliver(engram, conv, conv.sample_id.lower()))
        t_deliver = time.perf_counter() - t0
        for conv in convs:
            ingest(engram, conv, conv.sample_id.lower() + "-turns", with_context=True)
            ingest(engram, conv, conv.sample_id.lower() + "-plain", with_context=False)
        engram.index_pending()
        by_memory: dict[str, str] = {}  # turn memories of the two baselines → LoCoMo turn id
        counts: dict[str, int] = {}
        for space in engram.environments.list(LOCAL):
            flt = MemoryFilter(environment_ids=[space.id])
            counts[space.name] = engram.store.count(flt)
            if space.name.endswith(("-turns", "-plain")):
                offset = 0
                while page := engram.store.list_memories(flt, limit=1000, offset=offset):
                    by_memory.update((m.id, str(m.metadata["dia_id"])) for m in page)
                    offset += len(page)
        product = [counts[c.sample_id.lower()] for c in convs]
        print(
            f"delivered {len(dia)} messages in {t_deliver:.1f}s: {min(product)}-{max(product)} "
            "memories per conversation (messages + extracted)"
        )

        def assembled(env: str, q: str, budget: int) -> Packed:
            started = time.perf_counter()
            ctx = engram.context.assemble(
                LOCAL, q, environment=env, max_tokens=budget, preview=True
            )
            ms = (time.perf_counter() - started) * 1000
            return ctx.text, covered_by(ctx, dia, by_memory), ctx.tokens, ms

        def plain_bm25(env: str, q: str, budget: int) -> Packed:
            started = time.perf_counter()
            env_id = engram.environments.resolve(env, LOCAL).id
            hits = engram.store.keyword_search(q, MemoryFilter(environment_ids=[env_id]), limit=200)
            memories = {m.id: m for m in engram.store.get([h.memory_id for h in hits])}
            lines: list[str] = []
            covered: set[str] = set()
            used = 0
            for h in hits:
                m = memories[h.memory_id]
                line = f"- {m.content}\n"
                cost = count_tokens(line)
                if used + cost > budget:
                    continue
                used += cost
                lines.append(line)
                covered.add(by_memory[m.id])
            text = "".join(lines)
            ms = (time.perf_counter() - started) * 1000
            return text, covered, count_tokens(text), ms

        systems: dict[str, tuple[str, Callable[[str, str, int], Packed]]] = {
            "delivered (/extract)": ("", assembled),
            "(a) every turn a memory": ("-turns", assembled),
            "(b) plain BM25 turns": ("-plain", plain_bm25),
        }
        print(f"\nLoCoMo {args.data.name}: {len(convs)} conversations, categories {sorted(cats)}")
        header = (
            f"{'system':24} {'budget':>6} {'cat':>4} {'n':>5} {'evidence':>9} {'answer':>7} "
            f"{'tokens':>7} {'p50ms':>6} {'p95ms':>6}"
        )
        print(header)
        print("-" * len(header))
        for name, (suffix, fn) in systems.items():
            for budget in budgets:
                tallies: dict[str, Tally] = defaultdict(Tally)
                for conv in convs:
                    env = conv.sample_id.lower() + suffix
                    for q in conv.questions:
                        if q.category not in cats:
                            continue
                        packed = fn(env, q.question, budget)
                        tallies[str(q.category)].add(q, packed)
                        tallies["all"].add(q, packed)
                for cat in [*sorted(k for k in tallies if k != "all"), "all"]:
                    print(f"{name:24} {budget:6d} {cat:>4} {tallies[cat].row()}")
        engram.close()


if __name__ == "__main__":
    main()
