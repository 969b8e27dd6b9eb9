"""/api/v1/handoffs: where one session's work stands, for the next session (any agent) to pick
up. Owned: only their owner and a user they are addressed to may list, read or accept them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from engram.api.deps import ActorDep, EngramDep
from engram.handoffs import MAX_LIST, MAX_NAME_CHARS, Handoff, HandoffState
from engram.requests.handoffs import AcceptRequest, HandoffRequest

router = APIRouter(tags=["handoffs"])


@router.post("", status_code=status.HTTP_201_CREATED, summary="Leave a handoff in a project")
def begin(body: HandoffRequest, engram: EngramDep, actor: ActorDep) -> Handoff:
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
    handoff_id: str, engram: EngramDep, actor: ActorDep, body: AcceptRequest | None = None
) -> Handoff:
    body = body or AcceptRequest()
    return engram.handoffs.accept(handoff_id, actor, agent=body.agent, session=body.session)


@router.post("/{handoff_id}/cancel", summary="Withdraw an open handoff (its owner only)")
def cancel(handoff_id: str, engram: EngramDep, actor: ActorDep) -> Handoff:
    return engram.handoffs.cancel(handoff_id, actor)
