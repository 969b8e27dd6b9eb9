"""Environments: switch the one every screen shows, create one, share it with a role, see and
remove its members."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from engram.accounts import Role
from engram.web.pages import Posted, Signed, redirect, render

router = APIRouter()


@router.get("/environments")
def environments(
    request: Request, viewer: Signed, note: Annotated[str, Query(max_length=100)] = ""
) -> HTMLResponse:
    env = viewer.environment
    members = viewer.engram.environments.members(env.id, viewer.actor)
    names = viewer.engram.accounts.names(m.user_id for m in members)
    return render(
        request,
        viewer,
        "environments.html",
        members=members,
        names=names,
        roles=[r.value for r in Role],
        note=note,
    )


@router.post("/environments/switch")
def switch(viewer: Posted, environment: Annotated[str, Form(max_length=200)]) -> RedirectResponse:
    env = viewer.engram.environments.resolve(environment, viewer.actor)
    viewer.auth.switch(viewer.token, env.id)
    return redirect("/memories")


@router.post("/environments")
def create(
    viewer: Posted,
    name: Annotated[str, Form(max_length=200)],
    description: Annotated[str, Form(max_length=2000)] = "",
) -> RedirectResponse:
    env = viewer.engram.environments.create(name, viewer.actor, description)
    viewer.auth.switch(viewer.token, env.id)
    return redirect("/environments", note=f"created {env.name}")


@router.post("/environments/members")
def share(
    viewer: Posted,
    user_id: Annotated[str, Form(max_length=200)],
    role: Annotated[Role, Form()],
) -> RedirectResponse:
    viewer.engram.environments.share(viewer.environment.id, user_id.strip(), role, viewer.actor)
    return redirect("/environments", note=f"shared with {user_id} as {role.value}")


@router.post("/environments/members/{user_id}/remove")
def unshare(viewer: Posted, user_id: str) -> RedirectResponse:
    viewer.engram.environments.unshare(viewer.environment.id, user_id, viewer.actor)
    return redirect("/environments", note=f"removed {user_id}")
