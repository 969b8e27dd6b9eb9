"""Retrieval commands: search (with the score breakdown), context (the assembled prompt block),
and reembed (vectors for a new embedding model)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from engram.cli.common import EnvOption, JsonOption, console, emit_json, service, short
from engram.cli.tables import memory_table
from engram.models import Layer, MemoryFilter
from engram.retrieval.models import ScoreBreakdown, SearchMode


def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for (plain words).")],
    mode: Annotated[SearchMode, typer.Option(help="keyword, semantic or hybrid.")] = (
        SearchMode.HYBRID
    ),
    layer: Annotated[list[Layer] | None, typer.Option("--layer", "-l")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", "-c")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="All must match.")] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also search replaced memories.")
    ] = False,
    limit: Annotated[int, typer.Option(help="How many results (1-200).")] = 10,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Hybrid search with each result's five-factor score breakdown."""
    flt = MemoryFilter(layers=layer or [], categories=category or [], tags=tag or [])
    with service(ctx) as (engram, st):
        engram.index_pending()  # memories added since the last run become searchable by meaning
        result = engram.search.search(
            query,
            st.actor,
            environment=st.current_environment(env),
            mode=mode,
            flt=flt,
            include_superseded=include_superseded,
            limit=limit,
        )
    if as_json:
        emit_json(result)
        return
    rows = []
    for item in result.items:
        b = item.breakdown
        factors = (b.relevance, b.importance, b.confidence, b.recency, b.frequency)
        rows.append(
            {
                "score": f"{item.score:.3f}",
                **{k: f"{f.value:.2f}" for k, f in zip(_FACTORS, factors, strict=True)},
                "found by": _found_by(b),
                "id": item.memory.id,
                "content": short(item.memory.content, 70),
            }
        )
    count = len(result.items)
    title = f"{count} result{'' if count == 1 else 's'} ({result.mode.value}, {result.took_ms} ms)"
    wide = ("score", *_FACTORS, "found by", "id", "content")
    table = memory_table(rows, wide, ("score", "id", "content"), title=title)
    console.print(table)
    if not result.semantic_available:
        console.print("keyword only: no embedder is configured (ENGRAM_EMBEDDER)")


_FACTORS = ("rel", "imp", "conf", "rec", "freq")
"""The five factors' columns, in the breakdown's order (the narrow table shows the score only)."""


def _found_by(b: ScoreBreakdown) -> str:
    # the streams, then the provenance signals that lifted the memory
    parts = ["+".join(b.found_by)]
    if b.author_named:
        parts.append("author")
    if b.thread_support is not None:
        parts.append(f"thread {b.thread_support:.2f}")
    return ", ".join(p for p in parts if p)


def context(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="The task or question; empty for a brief.")] = "",
    max_tokens: Annotated[int, typer.Option(help="Token budget for the whole block.")] = 2000,
    max_facts: Annotated[
        int | None, typer.Option(help="At most this many facts (default: as the budget holds).")
    ] = None,
    preview: Annotated[
        bool, typer.Option("--preview", help="Do not count the memories as accessed.")
    ] = False,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Assemble the system-prompt block for a query: Soul, facts, conversation messages,
    episodes, procedures; the budget is filled while qualifying evidence remains."""
    with service(ctx) as (engram, st):
        engram.index_pending()
        result = engram.context.assemble(
            st.actor,
            query,
            environment=st.current_environment(env),
            max_tokens=max_tokens,
            max_facts=max_facts,
            preview=preview,
        )
    if as_json:
        emit_json(result)
        return
    typer.echo(result.text, nl=False)
    table = Table(title=f"{result.tokens} of {result.max_tokens} tokens")
    for col in ("tier", "items", "used", "share", "dropped", "duplicates", "note"):
        table.add_column(col)
    for tier in result.tiers:
        table.add_row(
            tier.name,
            str(len(tier.items)),
            str(tier.used),
            str(tier.budget),
            str(tier.dropped),
            str(tier.duplicates),
            tier.note,
        )
    console.print(table, style="dim")
    console.print(f"assembled in {result.timings_ms['total_ms']} ms", style="dim")


def reembed(
    ctx: typer.Context,
    prune: Annotated[
        bool, typer.Option("--prune", help="Then delete vectors of other embedding models.")
    ] = False,
) -> None:
    """Compute vectors with the current embedder (ENGRAM_EMBEDDER) for every memory that lacks
    one, e.g. after a model change."""
    with service(ctx) as (engram, st):
        if engram.indexer is None:
            raise typer.BadParameter("no embedder is configured (ENGRAM_EMBEDDER=none)")
        done = engram.indexer.reembed(st.actor, prune=prune)
    console.print(f"embedded {done.embedded} memories with {done.model_id}")
    if prune:
        console.print(f"removed {done.pruned} vectors of other models")
    for model, count in done.vectors.items():
        console.print(f"  {model}: {count} vectors")


def register(app: typer.Typer) -> None:
    app.command()(search)
    app.command()(context)
    app.command()(reembed)
