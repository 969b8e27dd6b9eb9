"""The write-time decision: merge into a duplicate, supersede a contradicted fact, queue an
unclear pair for review, or simply store the new fact."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.contradiction import (
    NO_CONFLICT,
    Finding,
    Strength,
    Verdict,
    check,
    may_be_clear,
)
from engram.lifecycle.dedup import Candidate
from engram.models import Memory


class Move(StrEnum):
    CREATE = "create"
    MERGE = "merge"
    SUPERSEDE = "supersede"
    REVIEW = "review"


@dataclass(frozen=True, slots=True)
class Decision:
    move: Move
    candidate: Candidate | None = None
    finding: Finding = NO_CONFLICT

    @property
    def reason(self) -> str:
        if self.candidate is None:
            return ""
        parts = [self.candidate.describe()]
        if self.finding.verdict is not Verdict.NONE:
            parts.append(self.finding.reason)
        return "; ".join(parts)


CREATE = Decision(Move.CREATE)


def supersede_allowed(finding: Finding, older: Memory, cfg: LifecycleConfig) -> bool:
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
    candidates: Sequence[Candidate],
    cfg: LifecycleConfig,
    *,
    contradictions: bool = True,
) -> Decision:
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
    """
    ranked = sorted(candidates, key=lambda c: c.similarity, reverse=True)
    findings = [
        (c, f)
        for c in ranked
        for band in [c.in_band(cfg)]
        if band or (c.jaccard > 0.0 and may_be_clear(c.memory.content, new_text))
        for f in [check(c.memory.content, new_text)]
        if band or f.verdict is Verdict.CLEAR
    ]
    for c, f in findings:
        if c.is_duplicate(cfg) and f.verdict not in (Verdict.CLEAR, Verdict.DISTINCT):
            return Decision(Move.MERGE, c, f)
    if not contradictions:
        return CREATE
    for c, f in findings:
        if f.verdict is Verdict.CLEAR and supersede_allowed(f, c.memory, cfg):
            return Decision(Move.SUPERSEDE, c, f)
    for c, f in findings:
        if f.verdict in (Verdict.CLEAR, Verdict.UNCLEAR):
            return Decision(Move.REVIEW, c, f)
    return CREATE
