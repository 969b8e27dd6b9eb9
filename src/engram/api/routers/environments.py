"""/api/v1/environments: isolated spaces of memories, and who may use them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from engram.accounts import Member
from engram.api.deps import ActorDep, EngramDep
from engram.api.schemas import EnvironmentIn, MemberIn
from engram.models import Environment

router = APIRouter(tags=["environments"])


@router.get("", summary="Your environments, then those shared with you")
def list_(engram: EngramDep, actor: ActorDep) -> list[Environment]:
    return engram.environments.list(actor)


@router.post("", status_code=status.HTTP_201_CREATED, summary="Create an environment")
def create(body: EnvironmentIn, engram: EngramDep, actor: ActorDep) -> Environment:
    return engram.environments.create(body.name, actor, body.description)


@router.get("/{ref}", summary="An environment by id, or by name among your own")
def get(ref: str, engram: EngramDep, actor: ActorDep) -> Environment:
    return engram.environments.resolve(ref, actor)


@router.delete("/{ref}", summary="Delete an environment (owners; --purge to drop its memories)")
def delete(
    ref: str,
    engram: EngramDep,
    actor: ActorDep,
    purge: Annotated[bool, Query(description="also remove its memories for good")] = False,
) -> Environment:
    return engram.environments.delete(ref, actor, purge=purge)


@router.get("/{ref}/members", summary="Everyone with access, the owner first")
def members(ref: str, engram: EngramDep, actor: ActorDep) -> list[Member]:
    return engram.environments.members(ref, actor)


@router.put(
    "/{ref}/members/{user_id}",
    summary="Share with a user, or change their role",
    description="`ref`: the environment's name (yours) or id (a URL path cannot hold "
    "`owner/name`); `user_id`: the user's id or name.",
)
def share(ref: str, user_id: str, body: MemberIn, engram: EngramDep, actor: ActorDep) -> Member:
    return engram.environments.share(ref, user_id, body.role, actor)


@router.delete(
    "/{ref}/members/{user_id}",
    summary="Stop sharing with a user (or leave)",
    description="`user_id`: the member's id or name; the owner cannot be removed.",
)
def unshare(ref: str, user_id: str, engram: EngramDep, actor: ActorDep) -> Member:
    return engram.environments.unshare(ref, user_id, actor)
