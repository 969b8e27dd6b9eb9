"""Captured coding sessions (from the agents' hooks): each session with its summary episode and
its observations in order, as stored (secrets already scrubbed on the way in)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.errors import NotFound
from engram.web.pages import Posted, Signed, redirect, render

router = APIRouter()


@router.get("/sessions")
def sessions(
    request: Request, viewer: Signed, q: Annotated[str, Query(max_length=1000)] = ""
) -> HTMLResponse:
    capture = viewer.engram.capture
    env = viewer.environment.id
    found = capture.search(q, viewer.actor, env, limit=50) if q.strip() else None
    listed = capture.list_sessions(viewer.actor, env, limit=100)
    return render(request, viewer, "sessions.html", sessions=listed, found=found, q=q)


@router.get("/sessions/{session_id}")
def session(
    request: Request,
    viewer: Signed,
    session_id: str,
    after: Annotated[int, Query(ge=0)] = 0,
    note: Annotated[str, Query(max_length=100)] = "",
) -> HTMLResponse:
    capture = viewer.engram.capture
    found = capture.get_session(session_id, viewer.actor)
    episode = None
    if found.episode_id:
        try:
            episode = viewer.engram.memories.get(found.episode_id, viewer.actor)
        except NotFound:
            episode = None
    observations = capture.observations(session_id, viewer.actor, limit=500, after=after)
    return render(
        request,
        viewer,
        "session.html",
        session=found,
        episode=episode,
        observations=observations,
        note=note,
    )


@router.post("/sessions/{session_id}/summarize")
def summarize(viewer: Posted, session_id: str) -> RedirectResponse:
    """Write or refresh the session's episode now (a write: the writer role)."""
    viewer.engram.capture.summarize(session_id, viewer.actor)
    return redirect(f"/sessions/{session_id}", note="summarized")
