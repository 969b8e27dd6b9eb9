"""Retrieval calls: ``client.search(...)`` and ``client.context(...)``, the two calls an app
makes around every LLM call, described once without I/O like those in ``_calls``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engram.models import Layer, Status
from engram.retrieval.models import AssembledContext, SearchMode, SearchResult
from engram.sdk._calls import Call


def _set(body: dict[str, Any]) -> dict[str, Any]:
    """The body without unset (None or empty) values: the server's defaults apply."""
    out: dict[str, Any] = {}
    for key, value in body.items():
        if value is None or value == []:
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


class RetrievalCalls:
    def search(
        self,
        query: str,
        environment: str | None = None,
        *,
        mode: SearchMode = SearchMode.HYBRID,
        layers: Sequence[Layer] = (),
        categories: Sequence[str] = (),
        tags: Sequence[str] = (),
        statuses: Sequence[Status] = (),
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        include_superseded: bool = False,
        limit: int = 10,
    ) -> Call[SearchResult]:
        """Hybrid (or keyword, or semantic) search of one environment; each result carries
        its score breakdown and the messages it came from."""
        body = _set(
            {
                "query": query,
                "environment": environment,
                "mode": SearchMode(mode).value,
                "layers": [Layer(x).value for x in layers],
                "categories": list(categories),
                "tags": list(tags),
                "statuses": [Status(s).value for s in statuses],
                "created_after": created_after,
                "created_before": created_before,
                "include_superseded": include_superseded,
                "limit": limit,
            }
        )
        return Call("POST", "/api/v1/search", SearchResult, {}, body)

    def context(
        self,
        query: str = "",
        environment: str | None = None,
        *,
        max_tokens: int = 2000,
        max_facts: int | None = None,
        max_messages: int | None = None,
        max_episodes: int | None = None,
        max_procedures: int | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        preview: bool = False,
    ) -> Call[AssembledContext]:
        """The system-prompt block for ``query`` within ``max_tokens`` (``preview``: without
        counting the packed memories as accessed)."""
        body = _set(
            {
                "query": query,
                "environment": environment,
                "max_tokens": max_tokens,
                "max_facts": max_facts,
                "max_messages": max_messages,
                "max_episodes": max_episodes,
                "max_procedures": max_procedures,
                "mode": SearchMode(mode).value,
            }
        )
        path = "/api/v1/context/preview" if preview else "/api/v1/context/assemble"
        return Call("POST", path, AssembledContext, {}, body)
