"""The review queue: each pair side by side, why it was paired, accept or dismiss."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.errors import NotFound
from engram.lifecycle.reviews import ReviewItem
from engram.models import Memory
from engram.web.pages import Posted, Signed, redirect, render

router = APIRouter()


@router.get("/reviews")
def queue(request: Request, viewer: Signed) -> HTMLResponse:
    engram = viewer.engram
    items = engram.lifecycle.reviews(viewer.actor, viewer.environment.id)
    pairs: list[tuple[ReviewItem, Memory | None, Memory | None]] = []
    for item in items:
        found: list[Memory | None] = []
        for memory_id in (item.memory_id, item.other_id):
            try:
                found.append(engram.memories.get(memory_id, viewer.actor))
            except NotFound:
                found.append(None)
        pairs.append((item, found[0], found[1]))
    return render(request, viewer, "reviews.html", pairs=pairs)


@router.post("/reviews/{review_id}/{decision}")
def resolve(
    viewer: Posted,
    review_id: str,
    decision: str,
    note: Annotated[str, Form(max_length=500)] = "",
) -> RedirectResponse:
    """``accept``: the newer fact supersedes the older; ``dismiss``: both stay."""
    if decision not in ("accept", "dismiss"):
        raise NotFound(f"no such decision {decision!r}: accept or dismiss")
    viewer.engram.lifecycle.resolve_review(
        review_id, viewer.actor, accept=decision == "accept", note=note
    )
    return redirect("/reviews", note=f"{decision}ed")
