"""/api/v1/reviews: the lifecycle's review queue, pairs of facts that may contradict each other
and wait for a person. Accepting supersedes the older fact; dismissing keeps both."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import Field

from engram.api.deps import ActorDep, EngramDep
from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.limits import MAX_REASON_CHARS, InputModel
from engram.service.lifecycle import MAX_REVIEWS

router = APIRouter(tags=["reviews"])


class ResolveIn(InputModel):
    note: str = Field(
        default="", max_length=MAX_REASON_CHARS, description="Why: kept with the item"
    )


@router.get("", summary="Review items of one environment, oldest first")
def list_(
    engram: EngramDep,
    actor: ActorDep,
    environment: Annotated[str | None, Query(description="Name or id; default: yours")] = None,
    status: Literal["open", "accepted", "dismissed", "closed", "all"] = "open",
    limit: Annotated[int, Query(ge=1, le=MAX_REVIEWS)] = 100,
) -> list[ReviewItem]:
    wanted = None if status == "all" else ReviewStatus(status)
    return engram.lifecycle.reviews(actor, environment, status=wanted, limit=limit)


@router.post("/{review_id}/accept", summary="Accept: the newer fact supersedes the older")
def accept(review_id: str, body: ResolveIn, engram: EngramDep, actor: ActorDep) -> ReviewItem:
    return engram.lifecycle.resolve_review(review_id, actor, accept=True, note=body.note)


@router.post("/{review_id}/dismiss", summary="Dismiss: both facts stay")
def dismiss(review_id: str, body: ResolveIn, engram: EngramDep, actor: ActorDep) -> ReviewItem:
    return engram.lifecycle.resolve_review(review_id, actor, accept=False, note=body.note)
