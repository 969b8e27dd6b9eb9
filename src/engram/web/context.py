"""Context preview: the exact block a model would get for a query, each tier's budget and use,
what was packed and what qualified but did not fit. A preview counts no access."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from engram.limits import MAX_CONTEXT_TOKENS, MAX_QUERY_CHARS, MIN_CONTEXT_TOKENS
from engram.retrieval.models import SearchMode
from engram.web.pages import Signed, render

router = APIRouter()


@router.get("/context")
def preview(
    request: Request,
    viewer: Signed,
    q: Annotated[str, Query(max_length=MAX_QUERY_CHARS)] = "",
    max_tokens: Annotated[int, Query(ge=MIN_CONTEXT_TOKENS, le=MAX_CONTEXT_TOKENS)] = 2000,
    mode: SearchMode = SearchMode.HYBRID,
    run: str = "",
) -> HTMLResponse:
    built = None
    if run or q:
        built = viewer.engram.context.assemble(
            viewer.actor,
            q,
            environment=viewer.environment.id,
            max_tokens=max_tokens,
            mode=mode,
            preview=True,
        )
    return render(
        request,
        viewer,
        "context.html",
        built=built,
        q=q,
        max_tokens=max_tokens,
        mode=mode.value,
        modes=list(SearchMode),
    )
