"""The write-time decision: merge into a duplicate, supersede a contradicted fact, queue an
unclear pair for review, or simply store the new fact."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.contradiction import NO_CONFLICT, Finding, Verdict, check
from engram.lifecycle.dedup import Candidate


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
    2. a clear contradiction within the band: supersede it;
    3. an unclear difference within the band: store the new fact and queue the pair;
    4. otherwise store the new fact.

    A clear contradiction wins over a merge with the same memory: a changed value is never a
    duplicate, however many words the two share; nor is a fact about a different subject.
    With ``contradictions`` off (compaction), only rule 1 applies.
    """
    ranked = sorted(
        (c for c in candidates if c.in_band(cfg)), key=lambda c: c.similarity, reverse=True
    )
    findings = [(c, check(c.memory.content, new_text)) for c in ranked]
    for c, f in findings:
        if c.is_duplicate(cfg) and f.verdict not in (Verdict.CLEAR, Verdict.DISTINCT):
            return Decision(Move.MERGE, c, f)
    if not contradictions:
        return CREATE
    for c, f in findings:
        if f.verdict is Verdict.CLEAR:
            return Decision(Move.SUPERSEDE, c, f)
    for c, f in findings:
        if f.verdict is Verdict.UNCLEAR:
            return Decision(Move.REVIEW, c, f)
    return CREATE
