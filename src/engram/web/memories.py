"""Memories: browse with filters, search with each result's score breakdown, add a fact."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.limits import MAX_QUERY_CHARS
from engram.models import Layer, MemoryFilter, NewMemory, Status
from engram.retrieval.models import SearchMode
from engram.web.pages import Posted, Signed, build, redirect, render, tags_of

router = APIRouter()
PAGE = 25
Text = Annotated[str, Query(max_length=200)]


@router.get("/")
@router.get("/memories")
def browse(
    request: Request,
    viewer: Signed,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    layer: Text = "",
    category: Text = "",
    tag: Text = "",
    status: Status = Status.ACTIVE,
    thread: Text = "",
    after: Text = "",
    before: Text = "",
    mode: SearchMode = SearchMode.HYBRID,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    note: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    """Without a query: a page of memories, newest change first; with one: ranked results,
    each with its breakdown."""
    flt = build(
        MemoryFilter,
        layers=[layer] if layer else [],
        categories=[category] if category else [],
        tags=tags_of(tag),
        statuses=[status],
        threads=[thread] if thread else [],
        created_after=after or None,
        created_before=before or None,
    )
    env = viewer.environment.id
    found = page = None
    if q.strip():
        found = viewer.engram.search.search(
            q, viewer.actor, environment=env, mode=mode, flt=flt, limit=PAGE
        )
    else:
        page = viewer.engram.memories.list_memories(
            viewer.actor, flt, environment=env, limit=PAGE, offset=offset
        )
    filters = {
        "q": q,
        "layer": layer,
        "category": category,
        "tag": tag,
        "status": status.value,
        "thread": thread,
        "after": after,
        "before": before,
        "mode": mode.value,
    }
    return render(
        request,
        viewer,
        "memories.html",
        found=found,
        page=page,
        filters=filters,
        query=urlencode({k: v for k, v in filters.items() if v}),
        layers=list(Layer),
        statuses=list(Status),
        modes=list(SearchMode),
        note=note,
    )


@router.post("/memories")
def add(
    viewer: Posted,
    content: Annotated[str, Form()],
    category: Annotated[str, Form()] = "general",
    tags: Annotated[str, Form()] = "",
    importance: Annotated[float, Form()] = 0.5,
) -> RedirectResponse:
    """A fact through the lifecycle (merged, superseded or queued for review like any write)."""
    new = build(
        NewMemory,
        content=content,
        category=category or "general",
        tags=tags_of(tags),
        importance=importance,
    )
    outcome = viewer.engram.lifecycle.remember(new, viewer.actor, viewer.environment.id)
    return redirect(f"/memories/{outcome.memory.id}", note=f"{outcome.action.value}")
