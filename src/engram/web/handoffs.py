"""The handoff inbox: the signed-in user's handoffs and those addressed to them (every state,
newest first), with accept and cancel as on the API."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.handoffs import HandoffState
from engram.service.handoffs import age
from engram.web.pages import Posted, Signed, redirect, render

router = APIRouter()


@router.get("/handoffs")
def inbox(
    request: Request, viewer: Signed, note: Annotated[str, Query(max_length=100)] = ""
) -> HTMLResponse:
    engram = viewer.engram
    listed = engram.handoffs.list(viewer.actor, states=list(HandoffState), limit=100)
    now = engram.clock()
    rows = [(h, age(now - h.created_at)) for h in listed]
    people = [h.owner for h in listed] + [h.for_user for h in listed if h.for_user]
    names = engram.accounts.names(people)
    return render(request, viewer, "handoffs.html", rows=rows, names=names, note=note)


@router.post("/handoffs/{handoff_id}/accept")
def accept(viewer: Posted, handoff_id: str) -> RedirectResponse:
    """Claim it here (exactly one accept succeeds; a second is a 409 page naming who won)."""
    viewer.engram.handoffs.accept(handoff_id, viewer.actor, agent="web")
    return redirect("/handoffs", note=f"accepted {handoff_id}")


@router.post("/handoffs/{handoff_id}/cancel")
def cancel(viewer: Posted, handoff_id: str) -> RedirectResponse:
    """Withdraw an open handoff (its owner only)."""
    viewer.engram.handoffs.cancel(handoff_id, viewer.actor)
    return redirect("/handoffs", note=f"cancelled {handoff_id}")
