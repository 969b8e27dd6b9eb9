"""Live capture: the newest observations captured in the current environment, across its most
recently active sessions, newest first; the page reloads itself every few seconds (a meta
refresh: no script) until paused."""

from __future__ import annotations

from collections import deque
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from engram.store.capture import CapturedSession, Observation
from engram.web.pages import Signed, Viewer, render

router = APIRouter()
SESSIONS = 5
"""How many of the most recently active sessions the page follows."""
SHOWN = 50
PAGE = 1000
REFRESH_SECONDS = 3


def _tail(viewer: Viewer, session: CapturedSession) -> deque[Observation]:
    """The session's last :data:`SHOWN` observations, paged through the capture service."""
    tail: deque[Observation] = deque(maxlen=SHOWN)
    after = 0
    while True:
        page = viewer.engram.capture.observations(session.id, viewer.actor, limit=PAGE, after=after)
        tail.extend(page)
        if len(page) < PAGE:
            return tail
        after = max(o.seq for o in page)


@router.get("/live")
def live(
    request: Request, viewer: Signed, paused: Annotated[bool, Query()] = False
) -> HTMLResponse:
    capture = viewer.engram.capture
    sessions = capture.list_sessions(viewer.actor, viewer.environment.id, limit=SESSIONS)
    by_id = {s.id: s for s in sessions}
    newest = sorted(
        (o for s in sessions for o in _tail(viewer, s)),
        key=lambda o: (o.at, o.seq),
        reverse=True,
    )[:SHOWN]
    rows = [(o, by_id[o.session]) for o in newest]
    return render(request, viewer, "live.html", rows=rows, paused=paused, refresh=REFRESH_SECONDS)
