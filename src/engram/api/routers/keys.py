"""/api/v1/keys: API keys. The token is returned once, when a key is created or rotated."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from engram.accounts import ApiKey, IssuedKey
from engram.api.deps import ActorDep, EngramDep
from engram.api.schemas import KeyIn

router = APIRouter(tags=["keys"])


@router.get("", summary="Your keys (admin scope; without it only the calling key; '*' for all)")
def list_(
    engram: EngramDep,
    actor: ActorDep,
    user_id: Annotated[str | None, Query(description="admins only")] = None,
) -> list[ApiKey]:
    return engram.accounts.list_keys(actor, user_id)


@router.post(
    "", status_code=status.HTTP_201_CREATED, summary="Create a key (admin scope; token shown once)"
)
def create(body: KeyIn, engram: EngramDep, actor: ActorDep) -> IssuedKey:
    return engram.accounts.issue_key(actor, body.name, body.scopes, user_id=body.user_id)


@router.get("/{key_id}", summary="A key's description (never its token)")
def get(key_id: str, engram: EngramDep, actor: ActorDep) -> ApiKey:
    return engram.accounts.get_key(key_id, actor)


@router.post(
    "/{key_id}/rotate",
    summary="A new token, same scopes; the old one stops at once (own key, or admin scope)",
)
def rotate(key_id: str, engram: EngramDep, actor: ActorDep) -> IssuedKey:
    return engram.accounts.rotate_key(key_id, actor)


@router.delete("/{key_id}", summary="Revoke a key at once (own key, or admin scope)")
def revoke(key_id: str, engram: EngramDep, actor: ActorDep) -> ApiKey:
    return engram.accounts.revoke_key(key_id, actor)
