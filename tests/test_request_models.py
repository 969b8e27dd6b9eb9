"""REST and MCP accept the same values for every operation they share: for each MCP tool
parameter, the bounds its input schema declares (lengths, ranges, item counts, patterns, enum
values, types) are those of the REST request field it stands for, as the OpenAPI schema states
them. Both edges take them from one request model (``engram.requests``) carrying the limits of
``engram.limits``, so a limit changed on one edge only fails here."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram import LOCAL, Engram
from engram.api import create_app
from engram.limits import MAX_QUERY_CHARS, MAX_SEARCH_RESULTS
from engram.mcp import Binding, build_server
from engram.store.sqlite import SQLiteStore

BOUNDS = (
    "type",
    "enum",
    "const",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "maxProperties",
)

SEARCH = ("post", "/api/v1/search")
CONTEXT = ("post", "/api/v1/context/assemble")
PREVIEW = ("post", "/api/v1/context/preview")
FACTS = ("post", "/api/v1/facts")
EPISODES = ("post", "/api/v1/episodes")
PROCEDURES = ("post", "/api/v1/procedures")
EDIT = ("patch", "/api/v1/facts/{memory_id}")
DELETE = ("delete", "/api/v1/facts/{memory_id}")
RESTORE = ("post", "/api/v1/facts/{memory_id}/restore")
OUTCOME = ("post", "/api/v1/procedures/{memory_id}/success")
FEEDBACK = ("post", "/api/v1/memories/{memory_id}/feedback")
LIST = ("get", "/api/v1/facts")
EXTRACT = ("post", "/api/v1/extract")
FORGET = ("delete", "/api/v1/conversations/{conversation_id}")
MAINTAIN = ("post", "/api/v1/maintenance")
PROVIDER = ("put", "/api/v1/providers/{name}")
BLOCK = ("put", "/api/v1/soul/blocks/{name}")
SNAPSHOT = ("post", "/api/v1/soul/snapshots")
BLOCK_RESTORE = ("post", "/api/v1/soul/blocks/{name}/restore")
HANDOFF = ("post", "/api/v1/handoffs")
ACCEPT = ("post", "/api/v1/handoffs/{handoff_id}/accept")
HANDOFFS = ("get", "/api/v1/handoffs")

SHARED: dict[str, tuple[tuple[str, str], dict[str, str]]] = {
    # tool: (REST operation, {MCP parameter: where REST takes it})
    # "a.b": body field b of body field a; "a[]": the items of the list a;
    # "?a": query (or path) parameter a
    "recall": (
        SEARCH,
        {
            "query": "query",
            "layer": "layers[]",
            "category": "categories[]",
            "tags": "tags",
            "limit": "limit",
            "mode": "mode",
            "include_superseded": "include_superseded",
            "environment": "environment",
        },
    ),
    "search_episodes": (SEARCH, {"query": "query", "limit": "limit", "environment": "environment"}),
    "search_procedures": (
        SEARCH,
        {"query": "query", "limit": "limit", "environment": "environment"},
    ),
    "get_context": (
        CONTEXT,
        {"query": "query", "max_tokens": "max_tokens", "environment": "environment"},
    ),
    "preview_context": (
        PREVIEW,
        {"query": "query", "max_tokens": "max_tokens", "environment": "environment"},
    ),
    "remember": (
        FACTS,
        {
            "content": "content",
            "category": "category",
            "tags": "tags",
            "importance": "importance",
            "confidence": "confidence",
            "session_id": "thread",
            "lifecycle": "lifecycle",
            "environment": "?environment",
        },
    ),
    "create_episode": (
        EPISODES,
        {
            "summary": "content",
            "key_decisions": "episode.key_decisions",
            "open_questions": "episode.open_questions",
            "participants": "episode.participants",
            "period_start": "episode.period_start",
            "period_end": "episode.period_end",
            "session_id": "thread",
            "agent": "episode.agent",
            "tags": "tags",
            "importance": "importance",
            "environment": "?environment",
        },
    ),
    "create_procedure": (
        PROCEDURES,
        {
            "name": "procedure.name",
            "description": "content",
            "steps": "procedure.steps",
            "trigger": "procedure.trigger",
            "tags": "tags",
            "importance": "importance",
            "environment": "?environment",
        },
    ),
    "update_memory": (
        EDIT,
        {
            "content": "content",
            "category": "category",
            "tags": "tags",
            "importance": "importance",
            "confidence": "confidence",
            "pinned": "pinned",
        },
    ),
    "delete_memory": (DELETE, {"reason": "?reason"}),
    "restore_memory": (RESTORE, {"version": "version"}),
    "record_procedure_outcome": (OUTCOME, {"note": "note"}),
    "feedback": (FEEDBACK, {"kind": "kind", "note": "note"}),
    "list_recent": (
        LIST,
        {"category": "?category[]", "limit": "?limit", "environment": "?environment"},
    ),
    "extract_memories": (
        EXTRACT,
        {
            "messages": "messages",
            "dry_run": "dry_run",
            "environment": "environment",
            "conversation": "conversation",
        },
    ),
    "delete_conversation": (
        FORGET,
        {"conversation_id": "?conversation_id", "purge": "?purge"},
    ),
    "maintain": (MAINTAIN, {"dry_run": "dry_run", "environment": "environment"}),
    "soul_update_block": (
        BLOCK,
        {
            "block": "?name",
            "text": "text",
            "mode": "mode",
            "priority": "priority",
            "enabled": "enabled",
            "section": "section",
            "reason": "reason",
            "environment": "?environment",
        },
    ),
    "soul_snapshot": (SNAPSHOT, {"label": "label", "environment": "?environment"}),
    "soul_restore": (BLOCK_RESTORE, {"version": "version", "environment": "?environment"}),
    "handoff_begin": (
        HANDOFF,
        {
            "summary": "summary",
            "open_questions": "open_questions",
            "next_steps": "next_steps",
            "files_touched": "files_touched",
            "from_agent": "from_agent",
            "for_agent": "for_agent",
            "for_user": "for_user",
            "cwd": "cwd",
            "environment": "environment",
        },
    ),
    "handoff_accept": (ACCEPT, {"agent": "agent"}),
    "handoff_list": (HANDOFFS, {"limit": "?limit", "environment": "?environment"}),
    "set_llm_provider": (
        PROVIDER,
        {
            "name": "?name",
            "model": "model",
            "kind": "kind",
            "base_url": "base_url",
            "api_key": "api_key",
            "timeout": "timeout",
        },
    ),
}


class Schemas:
    """Resolves ``$ref`` within one document (OpenAPI components or an input schema's $defs)."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in schema:
            node: Any = self.document
            for part in schema["$ref"].lstrip("#/").split("/"):
                node = node[part]
            schema = node
        return schema

    def value(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The schema of a value, resolved, without the ``null`` a default of None adds."""
        schema = self.resolve(schema)
        options = [o for o in schema.get("anyOf", []) if self.resolve(o).get("type") != "null"]
        if "anyOf" in schema and len(options) == 1:
            return self.value(options[0])
        return schema

    def bounds(self, schema: dict[str, Any]) -> dict[str, Any]:
        """What a schema allows: its bounds, its items' bounds, and each option's."""
        schema = self.value(schema)
        out = {k: schema[k] for k in BOUNDS if k in schema}
        if "items" in schema:
            out["items"] = self.bounds(schema["items"])
        if "anyOf" in schema:
            out["anyOf"] = [self.bounds(o) for o in schema["anyOf"]]
        if "properties" in schema:
            out["properties"] = {k: self.bounds(v) for k, v in schema["properties"].items()}
        return out

    def field(self, schema: dict[str, Any], path: str) -> dict[str, Any]:
        for part in path.split("."):
            items = part.endswith("[]")
            schema = self.value(schema)["properties"][part.removesuffix("[]")]
            if items:
                schema = self.value(schema)["items"]
        return schema


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, Any]]]:
    home = tmp_path_factory.mktemp("edges")
    with Engram(SQLiteStore(Path(home) / "edges.db"), home=home) as engram:
        spec = create_app(engram).openapi()
        tools = asyncio.run(build_server(Binding(engram, LOCAL, None)).list_tools())
        yield spec, {t.name: t.input_schema for t in tools}


def rest_field(spec: dict[str, Any], operation: tuple[str, str], where: str) -> dict[str, Any]:
    rest = Schemas(spec)
    method, path = operation
    op = spec["paths"][path][method]
    if where.startswith("?"):
        name = where[1:].removesuffix("[]")
        [param] = [p for p in op["parameters"] if p["name"] == name]
        schema = param["schema"]
        return rest.value(schema)["items"] if where.endswith("[]") else schema
    body = op["requestBody"]["content"]["application/json"]["schema"]
    return rest.field(body, where)


@pytest.mark.parametrize("tool", sorted(SHARED))
def test_rest_and_mcp_agree_on_every_limit(edges: tuple[Any, dict[str, Any]], tool: str) -> None:
    spec, tools = edges
    operation, params = SHARED[tool]
    schema = tools[tool]
    mcp = Schemas(schema)
    rest = Schemas(spec)
    disagree = {}
    for param, where in params.items():
        ours = mcp.bounds(schema["properties"][param])
        theirs = rest.bounds(rest_field(spec, operation, where))
        if ours != theirs:
            disagree[param] = {"mcp": ours, "rest": theirs}
    assert disagree == {}


def test_the_shared_limits_are_the_services(edges: tuple[Any, dict[str, Any]]) -> None:
    """The bounds compared above are those of engram.limits (and an empty query, a brief, is
    allowed on both edges)."""
    _, tools = edges
    mcp = Schemas(tools["recall"])
    query = mcp.bounds(tools["recall"]["properties"]["query"])
    assert query == {"type": "string", "maxLength": MAX_QUERY_CHARS}  # no minLength
    limit = mcp.bounds(tools["recall"]["properties"]["limit"])
    assert limit == {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS}
    # a bound given before a JSON-number check stays in the schema on both edges
    provider = Schemas(tools["set_llm_provider"])
    timeout = provider.bounds(tools["set_llm_provider"]["properties"]["timeout"])
    assert timeout == {"type": "number", "exclusiveMinimum": 0.0, "maximum": 600.0}


def test_the_comparison_sees_a_difference(edges: tuple[Any, dict[str, Any]]) -> None:
    spec, tools = edges
    rest = Schemas(spec)
    limit = rest.bounds(rest_field(spec, SEARCH, "limit"))
    episodes = Schemas(tools["search_episodes"])
    assert episodes.bounds(tools["search_episodes"]["properties"]["limit"]) == limit
    assert rest.bounds(rest_field(spec, LIST, "?limit")) != limit  # a listing pages to 1000
