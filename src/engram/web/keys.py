"""API keys: create (the token shown this once), rotate, revoke. Creating keys needs an
administrator, as on the API; a key never holds a scope its creator lacks. Below them the user's
OAuth grants (the remote MCP clients signed in as them), each revocable.

A create or rotate answers with a redirect (POST-redirect-GET): the token rides to the next
page in a cookie that lives a minute, is sent only to ``/ui/keys`` and is deleted by the page
that shows it, so the token is shown once and a reload never makes another key."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.accounts import IssuedKey, Scope
from engram.web.pages import PREFIX, Posted, Signed, Viewer, redirect, render

router = APIRouter()
ISSUED = "engram_issued_token"
"""The cookie that carries a new token from the POST to the page that shows it once."""
ISSUED_PATH = f"{PREFIX}/keys"


def _page(request: Request, viewer: Viewer, issued_id: str, token: str, note: str) -> HTMLResponse:
    """The keys page; with the id of a key just issued and its token (from the cookie), the
    token shown this once."""
    keys = viewer.engram.accounts.list_keys(viewer.actor)
    grants = viewer.engram.oauth.list_grants(viewer.actor)
    key = next((k for k in keys if k.id == issued_id), None) if issued_id and token else None
    issued = None if key is None else IssuedKey(key=key, token=token)
    return render(
        request,
        viewer,
        "keys.html",
        keys=sorted(keys, key=lambda k: k.created_at, reverse=True),
        issued=issued,
        grants=sorted(grants, key=lambda g: g.created_at, reverse=True),
        scopes=[s.value for s in Scope],
        note=note,
    )


@router.get("/keys")
def keys(
    request: Request,
    viewer: Signed,
    note: Annotated[str, Query(max_length=100)] = "",
    issued: Annotated[str, Query(max_length=64)] = "",
) -> HTMLResponse:
    """The keys; after a create or rotate (``issued`` = the key's id) its token, this once."""
    token = request.cookies.get(ISSUED, "")
    response = _page(request, viewer, issued, token, note)
    if token:
        response.delete_cookie(ISSUED, path=ISSUED_PATH, httponly=True, samesite="strict")
    return response


def _show_once(request: Request, issued: IssuedKey) -> RedirectResponse:
    response = redirect("/keys", issued=issued.key.id)
    response.set_cookie(
        ISSUED,
        issued.token,
        max_age=60,
        path=ISSUED_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/keys")
def create(
    request: Request,
    viewer: Posted,
    name: Annotated[str, Form(max_length=64)],
    scopes: Annotated[list[Scope], Form()],
) -> RedirectResponse:
    """The new key's token is on the next page only: it is never shown again."""
    return _show_once(request, viewer.engram.accounts.issue_key(viewer.actor, name, scopes))


@router.post("/keys/{key_id}/rotate")
def rotate(request: Request, viewer: Posted, key_id: str) -> RedirectResponse:
    return _show_once(request, viewer.engram.accounts.rotate_key(key_id, viewer.actor))


@router.post("/keys/{key_id}/revoke")
def revoke(viewer: Posted, key_id: str) -> RedirectResponse:
    key = viewer.engram.accounts.revoke_key(key_id, viewer.actor)
    return redirect("/keys", note=f"revoked {key.name}")


@router.post("/grants/{grant_id}/revoke")
def revoke_grant(viewer: Posted, grant_id: str) -> RedirectResponse:
    """Stop the client's tokens at once (the grant stays listed, marked revoked)."""
    grant = viewer.engram.oauth.revoke_grant(grant_id, viewer.actor)
    return redirect("/keys", note=f"revoked the grant of {grant.client_name}")
