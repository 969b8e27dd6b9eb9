"""/api/v1/profile: your habits across projects, held at the user level (in no environment).

Learned, once you opt in (``PUT /profile/learning``), from preference wording in your own
prompts ("always …", "never …", "prefer X over Y"), never from tool output; a habit joins the
profile once said in two projects or stated as global. Precedence: your current instruction >
the repository's rules > project memory > profile."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status
from pydantic import Field

from engram.api.deps import ActorDep, EngramDep
from engram.capture.habits import MAX_HABIT_CHARS
from engram.limits import BLANK_CLASS, InputModel
from engram.service.profile import Habit, ProfileStatus

router = APIRouter(tags=["profile"])
HABIT_PATTERN = rf"[^{BLANK_CLASS}.!;:,]"
"""A habit holds one character that is neither blank (:data:`engram.limits.BLANK_CLASS`) nor
the end punctuation its wording drops: what the service refuses as empty, the schema refuses
too."""
HabitText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_HABIT_CHARS, json_schema_extra={"pattern": HABIT_PATTERN}),
]


class HabitIn(InputModel):
    text: HabitText = Field(description="The habit, in your words")


class LearningIn(InputModel):
    enabled: bool = Field(description="Learn habits from your prompts (off until you opt in)")


@router.get("", summary="Your habits across projects, oldest first")
def list_(
    engram: EngramDep,
    actor: ActorDep,
    candidates: Annotated[
        bool, Query(description="Also the habits seen in one project so far")
    ] = False,
) -> list[Habit]:
    return [Habit.of(e) for e in engram.profile.list(actor, candidates=candidates)]


@router.post("", status_code=status.HTTP_201_CREATED, summary="Write a habit by hand")
def add(body: HabitIn, engram: EngramDep, actor: ActorDep) -> Habit:
    """Part of the profile at once; the same wording twice is 409."""
    return Habit.of(engram.profile.add(body.text, actor))


@router.get("/status", summary="Whether learning is on, and how many habits there are")
def status_(engram: EngramDep, actor: ActorDep) -> ProfileStatus:
    return engram.profile.status(actor)


@router.put("/learning", summary="Opt in to (or out of) learning habits from your prompts")
def learning(body: LearningIn, engram: EngramDep, actor: ActorDep) -> ProfileStatus:
    return engram.profile.set_learning(actor, enabled=body.enabled)


@router.patch("/{habit_id}", summary="Change a habit's wording")
def edit(habit_id: str, body: HabitIn, engram: EngramDep, actor: ActorDep) -> Habit:
    return Habit.of(engram.profile.edit(habit_id, body.text, actor))


@router.delete("/{habit_id}", summary="Remove a habit for good")
def delete(habit_id: str, engram: EngramDep, actor: ActorDep) -> Habit:
    return Habit.of(engram.profile.delete(habit_id, actor))
