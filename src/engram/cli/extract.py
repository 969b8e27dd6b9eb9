"""``engram extract FILE``: learn from a conversation file, and ``engram llm``: configure the
optional LLM providers used for extraction."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import SecretStr
from rich.table import Table

from engram.cli.common import EnvOption, JsonOption, console, emit_json, service, short
from engram.errors import InvalidInput
from engram.extraction.providers import ProviderConfig, ProviderKind
from engram.extraction.results import ConversationInput, ExtractionResult

llm_app = typer.Typer(help="LLM providers for extraction (keys are stored encrypted).")


def read_conversation(path: Path) -> ConversationInput:
    """Our format ({"conversation": {...}, "messages": [...]}) or a plain list of
    {"role", "content"} messages."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise InvalidInput(f"{path} is not JSON: {exc}") from exc
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: expected a list of messages or an object with 'messages'")
    return ConversationInput.model_validate(data)


def _print(result: ExtractionResult) -> None:
    table = Table(title="proposals (dry run: nothing stored)" if result.dry_run else "proposals")
    for col in ("#", "layer", "category", "imp", "conf", "outcome", "content"):
        table.add_column(col, overflow="fold" if col == "content" else "ellipsis")
    outcomes = {o.proposal: o for o in result.outcomes}
    for i, p in enumerate(result.proposals):
        o = outcomes.get(i)
        text = p.content if p.procedure is None else f"{p.procedure.name}: {p.procedure.steps}"
        table.add_row(
            str(i),
            p.layer.value,
            p.category,
            f"{p.importance:.2f}",
            f"{p.confidence:.2f}",
            o.action if o else "-",
            short(text, 200),
        )
    console.print(table)
    console.print(f"extractor: {result.extractor}")
    if result.fallback_reason:
        console.print(f"LLM failed, used the rules: {result.fallback_reason}")
    if result.conversation_id:
        console.print(
            f"conversation {result.conversation_id}: {result.messages_added} new messages"
        )


def extract(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="A JSON conversation file.")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the proposals without storing anything.")
    ] = False,
    llm: Annotated[
        str | None, typer.Option("--llm", help="Extract with this configured LLM provider.")
    ] = None,
    env: Annotated[str | None, EnvOption] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Learn facts, an episode and procedures from a conversation (no LLM needed)."""
    data = read_conversation(file)
    with service(ctx) as (engram, st):
        extractor = None
        if llm is not None:
            extractor = engram.providers.extractor(llm)
        result = engram.extraction.extract(
            data, st.actor, st.current_environment(env), dry_run=dry_run, extractor=extractor
        )
    if as_json:
        emit_json(result)
    else:
        _print(result)


@llm_app.command("add")
def llm_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A name for this provider.")],
    model: Annotated[str, typer.Option(help="The model to ask.")],
    kind: Annotated[
        ProviderKind, typer.Option(help="openai (any compatible endpoint) or anthropic.")
    ] = ProviderKind.OPENAI,
    base_url: Annotated[str, typer.Option(help="e.g. http://localhost:11434/v1 for Ollama.")] = "",
    api_key_env: Annotated[
        str | None,
        typer.Option(help="Read the API key from this environment variable (never an argument)."),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for an answer.")] = 60.0,
) -> None:
    """Configure (or replace) an LLM provider."""
    key = None
    if api_key_env is not None:
        value = os.environ.get(api_key_env)
        if not value:
            raise InvalidInput(f"environment variable {api_key_env} is not set")
        key = SecretStr(value)
    config = ProviderConfig(
        name=name, kind=kind, model=model, base_url=base_url, api_key=key, timeout=timeout
    )
    with service(ctx) as (engram, st):
        engram.providers.add(config, st.actor)
    console.print(f"provider {name} ({kind.value}, {model}) saved")


@llm_app.command("list")
def llm_list(ctx: typer.Context) -> None:
    """The configured providers (never their keys)."""
    with service(ctx) as (engram, st):
        for c in engram.providers.describe(st.actor):
            key = "key stored" if c.has_key else "no key"
            console.print(f"{c.name}\t{c.kind.value}\t{c.model}\t{c.url}\t{key}")


@llm_app.command("remove")
def llm_remove(ctx: typer.Context, name: str) -> None:
    """Forget a provider and its key."""
    with service(ctx) as (engram, st):
        engram.providers.remove(name, st.actor)
    console.print(f"provider {name} removed")


def register(app: typer.Typer) -> None:
    app.command()(extract)
    app.add_typer(llm_app, name="llm")
