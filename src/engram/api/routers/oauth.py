"""/api/v1/oauth/grants: the remote MCP clients signed in through Engram's OAuth authorization
server (``/authorize``, ``/token``; see the README). Each grant is one user's consent to one
client; revoking it stops its tokens at once."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from engram.accounts import Grant
from engram.api.deps import ActorDep, EngramDep

router = APIRouter(tags=["oauth"])


@router.get(
    "/grants",
    summary="Your OAuth grants: the MCP clients that signed in as you (admins: '*' for all)",
)
def list_grants(
    engram: EngramDep,
    actor: ActorDep,
    user_id: Annotated[str | None, Query(description="another user's id, or '*' (admins)")] = None,
) -> list[Grant]:
    return engram.oauth.list_grants(actor, user_id)


@router.get("/grants/{grant_id}", summary="One OAuth grant")
def get_grant(grant_id: str, engram: EngramDep, actor: ActorDep) -> Grant:
    return engram.oauth.get_grant(grant_id, actor)


@router.delete(
    "/grants/{grant_id}",
    summary="Revoke an OAuth grant: its access and refresh tokens stop working at once",
)
def revoke_grant(grant_id: str, engram: EngramDep, actor: ActorDep) -> Grant:
    return engram.oauth.revoke_grant(grant_id, actor)
