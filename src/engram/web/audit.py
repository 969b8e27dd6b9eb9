"""The audit log with filters (user, interface, action or its prefix, target, dates)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from engram.accounts import AuditQuery
from engram.web.pages import Signed, build, render

router = APIRouter()
Text = Annotated[str, Query(max_length=200)]


@router.get("/audit")
def audit(
    request: Request,
    viewer: Signed,
    user: Text = "",
    interface: Text = "",
    action: Text = "",
    target: Text = "",
    since: Text = "",
    until: Text = "",
) -> HTMLResponse:
    fields = {
        "user_id": user,
        "interface": interface,
        "action": action,
        "target": target,
        "since": since,
        "until": until,
    }
    query = build(AuditQuery, **{k: v for k, v in fields.items() if v}, limit=200)
    entries = viewer.engram.audit.query(query, viewer.actor)
    return render(request, viewer, "audit.html", entries=entries, filters=fields)
