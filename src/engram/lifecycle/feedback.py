"""Feedback on a memory (helpful, wrong, outdated): how far each kind moves its confidence,
and what a feedback call returns (applied by :mod:`engram.service.feedback`)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from engram.models import Memory


class FeedbackKind(StrEnum):
    HELPFUL = "helpful"
    WRONG = "wrong"
    OUTDATED = "outdated"


STEPS: dict[FeedbackKind, float] = {
    FeedbackKind.HELPFUL: +0.1,
    FeedbackKind.OUTDATED: -0.25,
    FeedbackKind.WRONG: -0.5,
}
"""How far each kind moves confidence (clamped to [0, 1])."""


class FeedbackOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: FeedbackKind
    confidence_before: float
    confidence_after: float
    memory: Memory
