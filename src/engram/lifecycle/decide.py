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
    RESTATED,
    Finding,
    Strength,
    Verdict,
    check,
    may_be_clear,
    restates,
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
        if self.finding.verdict is not Verdict.NONE or self.finding.rule:
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
       importance (:func:`supersede_allowed`): supersede it; failing that, a fact the new text
       only restates (:func:`~engram.lifecycle.contradiction.restates`: each of its claims on
       a slot of the older fact with the same value, nothing more), however few words they
       share: merge into it;
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
    ranked = sorted(candidates, key=_similarity, reverse=True)
    made: dict[int, Finding] = {}

    def finding(at: int) -> Finding:
        found = made.get(at)
        if found is None:
            found = made[at] = check(ranked[at].memory.content, new_text)
        return found

    # Candidate.is_duplicate and in_band, inlined (a write ranks about 40 candidates)
    dup_j, dup_cos = cfg.dedup_jaccard, cfg.dedup_cosine
    least = min(dup_j, dup_cos)
    for at, (_, j, cos) in enumerate(ranked):
        if j >= dup_j or (cos is not None and cos >= dup_cos):
            if finding(at).verdict not in (Verdict.CLEAR, Verdict.DISTINCT):
                return Decision(Move.MERGE, ranked[at], made[at])
        elif max(j, 0.0 if cos is None else cos) < least:
            break  # ranked by similarity: no later candidate is a duplicate either
    if not contradictions:
        return CREATE
    band_j, band_cos = cfg.contradiction_jaccard, cfg.contradiction_cosine
    review: Decision[F] | None = None
    restated: Decision[F] | None = None
    for at, (fact, j, cos) in enumerate(ranked):
        if j >= dup_j or (cos is not None and cos >= dup_cos):
            band = True
        else:
            band = cos >= band_cos if cos is not None else j >= band_j
        if not band and not (j > 0.0 and may_be_clear(fact.content, new_text)):
            continue
        f = finding(at)
        restating = restated is None and f.verdict is Verdict.NONE and j > 0.0
        if restating and restates(fact.content, new_text):
            restated = Decision(Move.MERGE, ranked[at], RESTATED)
            continue
        if f.verdict is Verdict.CLEAR and supersede_allowed(f, fact, cfg):
            return Decision(Move.SUPERSEDE, ranked[at], f)
        if review is None and (
            f.verdict is Verdict.CLEAR or (band and f.verdict is Verdict.UNCLEAR)
        ):
            review = Decision(Move.REVIEW, ranked[at], f)
    if restated is not None:  # a contradiction of another fact, ranked lower, wins over it
        return restated
    return CREATE if review is None else review


def _similarity(c: Candidate[Fact]) -> float:
    """:attr:`Candidate.similarity`, as a plain function (a sort key)."""
    cos = c.cosine
    return c.jaccard if cos is None or cos < c.jaccard else cos
