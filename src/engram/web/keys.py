"""API keys: create (the token shown this once), rotate, revoke. Creating keys needs an
administrator, as on the API; a key never holds a scope its creator lacks. Below them the user's
OAuth grants (the remote MCP clients signed in as them), each revocable."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.accounts import IssuedKey, Scope
from engram.web.pages import Posted, Signed, Viewer, redirect, render

router = APIRouter()


def _page(request: Request, viewer: Viewer, issued: IssuedKey | None, note: str) -> HTMLResponse:
    keys = viewer.engram.accounts.list_keys(viewer.actor)
    grants = viewer.engram.oauth.list_grants(viewer.actor)
    return render(
        request,
        viewer,
        "keys.html",
        201 if issued else 200,
        keys=sorted(keys, key=lambda k: k.created_at, reverse=True),
        issued=issued,
        grants=sorted(grants, key=lambda g: g.created_at, reverse=True),
        scopes=[s.value for s in Scope],
        note=note,
    )


@router.get("/keys")
def keys(
    request: Request, viewer: Signed, note: Annotated[str, Query(max_length=100)] = ""
) -> HTMLResponse:
    return _page(request, viewer, None, note)


@router.post("/keys")
def create(
    request: Request,
    viewer: Posted,
    name: Annotated[str, Form(max_length=64)],
    scopes: Annotated[list[Scope], Form()],
) -> HTMLResponse:
    """The new key's token is on this page only: it is never shown again."""
    issued = viewer.engram.accounts.issue_key(viewer.actor, name, scopes)
    return _page(request, viewer, issued, "")


@router.post("/keys/{key_id}/rotate")
def rotate(request: Request, viewer: Posted, key_id: str) -> HTMLResponse:
    issued = viewer.engram.accounts.rotate_key(key_id, viewer.actor)
    return _page(request, viewer, issued, "")


@router.post("/keys/{key_id}/revoke")
def revoke(viewer: Posted, key_id: str) -> RedirectResponse:
    key = viewer.engram.accounts.revoke_key(key_id, viewer.actor)
    return redirect("/keys", note=f"revoked {key.name}")


@router.post("/grants/{grant_id}/revoke")
def revoke_grant(viewer: Posted, grant_id: str) -> RedirectResponse:
    """Stop the client's tokens at once (the grant stays listed, marked revoked)."""
    grant = viewer.engram.oauth.revoke_grant(grant_id, viewer.actor)
    return redirect("/keys", note=f"revoked the grant of {grant.client_name}")
