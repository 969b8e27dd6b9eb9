"""/api/v1/handoffs: where one session's work stands, for the next session (any agent) to pick
up. Owned: only their owner and a user they are addressed to may list, read or accept them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import Field

from engram.api.deps import ActorDep, EngramDep
from engram.handoffs import Handoff, HandoffState
from engram.limits import InputModel
from engram.service.handoffs import (
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    MAX_LIST,
    MAX_NAME_CHARS,
    MAX_SUMMARY_CHARS,
)

router = APIRouter(tags=["handoffs"])

_Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
_Name = Annotated[str | None, Field(default=None, max_length=MAX_NAME_CHARS)]


class HandoffIn(InputModel):
    summary: str = Field(
        min_length=1,
        max_length=MAX_SUMMARY_CHARS,
        pattern=r"\S",
        description="What was done, what failed, where the work stands (not only blanks)",
    )
    environment: str | None = Field(
        default=None, max_length=MAX_NAME_CHARS, description="Name or id; default: yours"
    )
    cwd: str = Field(default="", max_length=4096, description="The working directory")
    from_agent: _Name = Field(default=None, description="Who leaves it (default: 'api')")
    for_agent: _Name = Field(default=None, description="Deliver it to this agent only")
    for_user: _Name = Field(
        default=None, description="Address it to this user (id or name): they may accept it"
    )
    open_questions: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)
    next_steps: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)
    files_touched: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)


class AcceptIn(InputModel):
    agent: _Name = Field(default=None, description="The agent accepting it")
    session: _Name = Field(default=None, description="The session accepting it")


@router.post("", status_code=status.HTTP_201_CREATED, summary="Leave a handoff in a project")
def begin(body: HandoffIn, engram: EngramDep, actor: ActorDep) -> Handoff:
    return engram.handoffs.begin(
        body.summary,
        actor,
        environment=body.environment,
        cwd=body.cwd,
        from_agent=body.from_agent,
        for_agent=body.for_agent,
        for_user=body.for_user,
        open_questions=body.open_questions,
        next_steps=body.next_steps,
        files_touched=body.files_touched,
    )


@router.get("", summary="Your handoffs and those addressed to you, newest first")
def list_(
    engram: EngramDep,
    actor: ActorDep,
    environment: Annotated[
        str | None, Query(max_length=MAX_NAME_CHARS, description="Name or id; default: every one")
    ] = None,
    state: Annotated[
        list[HandoffState] | None, Query(description="Repeat for several; default: open")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST)] = 20,
) -> list[Handoff]:
    states = state or [HandoffState.OPEN]
    return engram.handoffs.list(actor, environment=environment, states=states, limit=limit)


@router.get("/{handoff_id}", summary="One handoff (yours, or addressed to you)")
def get(handoff_id: str, engram: EngramDep, actor: ActorDep) -> Handoff:
    return engram.handoffs.get(handoff_id, actor)


@router.post(
    "/{handoff_id}/accept",
    summary="Claim a handoff: exactly one accept succeeds, any other gets 409 naming who "
    "accepted it",
)
def accept(
    handoff_id: str, engram: EngramDep, actor: ActorDep, body: AcceptIn | None = None
) -> Handoff:
    body = body or AcceptIn()
    return engram.handoffs.accept(handoff_id, actor, agent=body.agent, session=body.session)


@router.post("/{handoff_id}/cancel", summary="Withdraw an open handoff (its owner only)")
def cancel(handoff_id: str, engram: EngramDep, actor: ActorDep) -> Handoff:
    return engram.handoffs.cancel(handoff_id, actor)
