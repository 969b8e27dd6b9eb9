"""Users (administrators): every account, create one with a password, set a password. Others
see only their own account and may change their own password."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.web.pages import Posted, Signed, redirect, render

router = APIRouter()


@router.get("/users")
def users(
    request: Request, viewer: Signed, note: Annotated[str, Query(max_length=100)] = ""
) -> HTMLResponse:
    listed = viewer.engram.accounts.list_users(viewer.actor)
    return render(request, viewer, "users.html", users=listed, note=note)


@router.post("/users")
def create(
    viewer: Posted,
    name: Annotated[str, Form(max_length=64)],
    password: Annotated[str, Form(max_length=1024)],
    admin: Annotated[str, Form()] = "",
) -> RedirectResponse:
    user = viewer.engram.accounts.create_user(
        name, viewer.actor, password=password, is_admin=admin == "on"
    )
    return redirect("/users", note=f"created {user.name} ({user.id})")


@router.post("/users/{user_id}/password")
def set_password(
    request: Request,
    viewer: Posted,
    user_id: str,
    password: Annotated[str, Form(max_length=1024)],
    current: Annotated[str, Form(max_length=1024)] = "",
) -> RedirectResponse:
    """A new password for the user of this id (or name); your own needs your current one.
    Every session of that user ends (you sign in again with the new one)."""
    found = viewer.engram.accounts.find_user(user_id, viewer.actor)
    if found.id == viewer.user.id:
        client = request.client.host if request.client else ""
        viewer.auth.authenticate_password(viewer.user.name, current, client)
    user = viewer.engram.accounts.set_password(found.id, password, viewer.actor)
    viewer.auth.end_all(user.id)
    if user.id == viewer.user.id:
        return redirect("/login")
    return redirect("/users", note=f"password set for {user.name}; their sessions ended")
