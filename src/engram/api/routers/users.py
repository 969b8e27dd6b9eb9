"""/api/v1/users: accounts. Admins create and list them; everyone sees and edits themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from engram.accounts import User
from engram.api.deps import ActorDep, EngramDep
from engram.api.schemas import PasswordIn, UserIn
from engram.erasure import Erased

router = APIRouter(tags=["users"])


@router.get("/me", summary="The account behind your key")
def me(engram: EngramDep, actor: ActorDep) -> User:
    return engram.accounts.get_user(actor.user_id, actor)


@router.get("", summary="Every account (admins), else just yours")
def list_(engram: EngramDep, actor: ActorDep) -> list[User]:
    return engram.accounts.list_users(actor)


@router.post("", status_code=status.HTTP_201_CREATED, summary="Create an account (admins)")
def create(body: UserIn, engram: EngramDep, actor: ActorDep) -> User:
    return engram.accounts.create_user(
        body.name, actor, password=body.password, is_admin=body.is_admin
    )


@router.get("/{user_id}", summary="An account (yours, or any for admins)")
def get(user_id: str, engram: EngramDep, actor: ActorDep) -> User:
    return engram.accounts.get_user(user_id, actor)


@router.delete(
    "/{user_id}",
    summary="Delete an account (admins); purge: with everything that is theirs, for good",
)
def delete(
    user_id: str,
    engram: EngramDep,
    actor: ActorDep,
    purge: Annotated[
        bool,
        Query(
            description="Also remove the environments they own (with every memory, version, "
            "vector, conversation and captured session), their conversations elsewhere and "
            "the memories they wrote there"
        ),
    ] = False,
) -> Erased:
    return engram.erasure.delete_user(user_id, actor, purge=purge)


@router.put("/{user_id}/password", summary="Set a password (Argon2id) for the dashboard")
def set_password(user_id: str, body: PasswordIn, engram: EngramDep, actor: ActorDep) -> User:
    return engram.accounts.set_password(user_id, body.password, actor)
