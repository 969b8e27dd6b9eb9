"""The write-time decision: merge into a duplicate, supersede a contradicted fact, queue an
unclear pair for review, or simply store the new fact."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic

from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.contradiction import (
    NO_CONFLICT,
    Finding,
    Strength,
    Verdict,
    check,
    may_be_clear,
)
from engram.lifecycle.dedup import Candidate, F, Fact


class Move(StrEnum):
    CREATE = "create"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    REVIEW = "review"


@dataclass(frozen=True, slots=True)
class Decision(Generic[F]):
    move: Move
    candidate: Candidate[F] | None = None
    finding: Finding = NO_CONFLICT

    @property
    def reason(self) -> str:
        if self.candidate is None:
            return ""
        parts = [self.candidate.describe()]
        if self.finding.verdict is not Verdict.NONE:
            parts.append(self.finding.reason)
        return "; ".join(parts)


CREATE: Decision[Any] = Decision(Move.CREATE)


def supersede_allowed(finding: Finding, older: Fact, cfg: LifecycleConfig) -> bool:
    """A clear conflict retires the older memory only when the match is strong enough for it:
    a pinned or important memory (importance >= ``protect_importance``) needs a strong match
    (same subject, named attribute, every claim replaced); any other a plain one. Below that
    the pair goes to the review queue."""
    need = (
        Strength.STRONG
        if older.pinned or older.importance >= cfg.protect_importance
        else Strength.PLAIN
    )
    return finding.strength >= need


def decide(
    new_text: str,
    candidates: Sequence[Candidate[F]],
    cfg: LifecycleConfig,
    *,
    contradictions: bool = True,
) -> Decision[F]:
    """Rules, in order, over candidates ranked by similarity:

    1. a duplicate (Jaccard or cosine at the dedup threshold) that the new text does not
       clearly contradict: merge into it;
    2. a clear contradiction on the same slot, strong enough for the older memory's
       importance (:func:`supersede_allowed`): supersede it;
    3. a clear contradiction not strong enough, or an unclear one: store the new fact and
       queue the pair;
    4. otherwise store the new fact.

    A candidate is checked when it is within the similarity band, or when it shares a word
    with the new text and clearly conflicts on a slot (subject and attribute): the slot is the
    evidence, so a move from "lives in Porto" to "moved to Lisbon" is seen without an
    embedding.

    A clear contradiction wins over a merge with the same memory: a changed value is never a
    duplicate, however many words the two share; nor is a fact about a different subject.
    With ``contradictions`` off (compaction), only rule 1 applies.

    Each rule stops at its first match, so a pair is checked only when an earlier one did not
    decide: rule 1 checks only duplicates (always within the band), rule 2 stops at the first
    contradiction it may act on, and a check made by rule 1 is not made again.
    """
    ranked = sorted(candidates, key=lambda c: c.similarity, reverse=True)
    made: dict[int, Finding] = {}

    def finding(at: int) -> Finding:
        found = made.get(at)
        if found is None:
            found = made[at] = check(ranked[at].memory.content, new_text)
        return found

    for at, c in enumerate(ranked):
        if c.is_duplicate(cfg) and finding(at).verdict not in (Verdict.CLEAR, Verdict.DISTINCT):
            return Decision(Move.MERGE, c, made[at])
    if not contradictions:
        return CREATE
    review: Decision[F] | None = None
    for at, c in enumerate(ranked):
        band = c.in_band(cfg)
        if not band and not (c.jaccard > 0.0 and may_be_clear(c.memory.content, new_text)):
            continue
        f = finding(at)
        if f.verdict is Verdict.CLEAR and supersede_allowed(f, c.memory, cfg):
            return Decision(Move.SUPERSEDE, c, f)
        if review is None and (
            f.verdict is Verdict.CLEAR or (band and f.verdict is Verdict.UNCLEAR)
        ):
            review = Decision(Move.REVIEW, c, f)
    return CREATE if review is None else review
