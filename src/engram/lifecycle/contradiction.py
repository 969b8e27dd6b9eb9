"""Contradiction: rules (no LLM) that decide whether a new fact takes back an older one.

Both facts are read as claims (:mod:`engram.lifecycle.claims`): (subject, attribute, value) per
clause. Only two claims about the same *slot* — the same subject and the same attribute — can
conflict; a shared subject and a change word are not enough ("Caroline moved to Lisbon" says
nothing about "Caroline is allergic to peanuts").

For a pair of claims on one slot:
- one side negated, the other not, about the same value: a conflict;
- a different value of a single-valued attribute (home, employer, editor, "the deploy target
  of project atlas", a preference between the same options): a conflict;
- a different value of a many-valued attribute (allergies, pets, likes): another value, unless
  the new claim carries a change marker ("now", "switched", "no longer"), which makes it
  unclear;
- the same value said with different extra words on both sides: unclear.

A conflict is *clear* and has a strength: ``strong`` when the subjects are equal, the
attribute is named (a relation, a value class, an attribute noun) and the new fact replaces
every claim of the older one; ``plain`` when the attribute is only a bare verb; ``weak`` when
one subject only contains the other or the older fact holds other claims the new one leaves
alone. The caller supersedes only what is strong enough for the older memory's importance.

Same attribute, different subject ("Alice uses vim" / "Bob uses vim"), and, where no claim
can be read, different numbers, names or swapped words ("bought 35 plums" / "bought 35
batteries") make the pair *distinct*: two facts about different things, never merged nor
superseded. Anything else is no conflict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from functools import lru_cache

from engram.lifecycle.claims import (
    FILLERS,
    MARKER_WORDS,
    NEGATIONS,
    Claim,
    claims,
    clauses,
    norm,
)
from engram.text import STOPWORDS, words


class Verdict(StrEnum):
    NONE = "none"
    UNCLEAR = "unclear"
    CLEAR = "clear"
    DISTINCT = "distinct"
    """Different subjects ("Alice uses vim" / "Bob uses vim"): neither the same fact nor a
    conflict, however many words they share."""


class Strength(IntEnum):
    WEAK = 1
    PLAIN = 2
    STRONG = 3


@dataclass(frozen=True, slots=True)
class Finding:
    verdict: Verdict
    rule: str = ""
    detail: str = ""
    strength: Strength = Strength.WEAK

    @property
    def reason(self) -> str:
        return f"{self.rule}: {self.detail}" if self.detail else self.rule


NO_CONFLICT = Finding(Verdict.NONE)

_MONTHS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday""".split()  # noqa: SIM905
)
_NUMBER_RE = re.compile(r"\d")
_NAME_RE = re.compile(r"[^\W\d_]{2,}(?:['’][^\W\d_]+)?")


def _is_value_token(word: str) -> bool:
    return bool(_NUMBER_RE.search(word)) or word in _MONTHS


def _content(ws: list[str]) -> set[str]:
    return {norm(w) for w in ws if w not in STOPWORDS and w not in NEGATIONS}


@lru_cache(maxsize=65_536)
def _names(text: str) -> frozenset[str]:
    """Capitalised words (the first too, unless a stopword): names of people, places,
    products."""
    tokens = _NAME_RE.findall(text)
    if tokens and tokens[0].lower() in STOPWORDS:
        tokens = tokens[1:]
    return frozenset(norm(t.lower().replace("’", "'")) for t in tokens if t[0].isupper())


def _show(ws: set[str] | frozenset[str]) -> str:
    return ", ".join(sorted(ws))


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool | None:
    """True: equal; False: one contains the other (or one is implicit); None: different."""
    if a == b:
        return True
    if a <= b or b <= a:
        return False
    return None


def _values(c: Claim) -> frozenset[str]:
    return frozenset(w for w in c.value if _is_value_token(w))


_FACETS = frozenset(
    """port host hostname version region url address server replica backup backups schema
    size password user username""".split()  # noqa: SIM905
)
"""Values that name a facet of the attribute rather than a value of it: "the staging DB is
on port 5433" says where the database listens, not which database it is."""


def _compare(old: Claim, new: Claim, others: int) -> Finding:
    """Two claims on one slot (same attribute, subjects equal or nested)."""
    equal = _same_subject(old.subject, new.subject) is True
    slot = new.show() if len(new.subject) >= len(old.subject) else old.show()
    if (old.core in _FACETS) != (new.core in _FACETS):
        detail = f"{slot}: {old.shown} vs {new.shown}"
        return Finding(Verdict.DISTINCT, "another facet of the attribute", detail)
    if not equal or others:
        strength = Strength.WEAK
    elif old.explicit and new.explicit:
        strength = Strength.STRONG
    else:
        strength = Strength.PLAIN
    if others:
        slot += f"; the older fact holds {others} other claim{'s' if others > 1 else ''}"
    same_value = old.core == new.core and _values(old) == _values(new)
    if old.negated != new.negated and (same_value or old.value & new.value):
        side = "new" if new.negated else "old"
        return Finding(
            Verdict.CLEAR, "negation", f"{slot}: only the {side} fact is negated", strength
        )
    if not same_value:
        detail = f"{slot}: {old.shown} -> {new.shown}"
        if old.core == new.core:
            detail = f"{slot}: {_show(_values(old))} -> {_show(_values(new))}"
        if new.marker is not None:
            detail += f" ({new.marker!r})"
        if old.many or new.many:
            if new.changed and not old.changed:
                return Finding(Verdict.UNCLEAR, "change marker on a many-valued attribute", detail)
            return Finding(Verdict.DISTINCT, "another value of a many-valued attribute", detail)
        return Finding(Verdict.CLEAR, "same slot, different value", detail, strength)
    extra_old, extra_new = old.value - new.value, new.value - old.value
    if extra_old and extra_new and not (old.many and new.many):
        return Finding(
            Verdict.UNCLEAR,
            "same slot, different detail",
            f"{slot}: {_show(extra_old)} vs {_show(extra_new)}",
        )
    return NO_CONFLICT


def _by_claims(co: tuple[Claim, ...], cn: tuple[Claim, ...]) -> Finding | None:
    """The finding from the facts' claims, or None when no two claims share an attribute."""
    best: Finding | None = None
    distinct: Finding | None = None
    for new in cn:
        for old in co:
            if old.attribute != new.attribute:
                continue
            if _same_subject(old.subject, new.subject) is None:
                distinct = distinct or Finding(
                    Verdict.DISTINCT,
                    "different subject",
                    f"{_show(old.subject - new.subject)} vs {_show(new.subject - old.subject)}",
                )
                continue
            others = sum(
                1
                for c in co
                if c is not old and not (c.attribute == new.attribute and c.subject == new.subject)
            )
            found = _compare(old, new, others)
            if best is None or _rank(found) > _rank(best):
                best = found
    if best is not None:
        return best
    if distinct is not None:
        return distinct
    attrs_old, attrs_new = {c.attribute for c in co}, {c.attribute for c in cn}
    if co and cn and all(c.explicit for c in (*co, *cn)) and not attrs_old & attrs_new:
        return Finding(
            Verdict.DISTINCT,
            "different attributes",
            f"{_show(frozenset(attrs_old))} vs {_show(frozenset(attrs_new))}",
        )
    return None


_ORDER = {Verdict.CLEAR: 3, Verdict.UNCLEAR: 2, Verdict.DISTINCT: 1, Verdict.NONE: 0}


def _rank(f: Finding) -> tuple[int, int]:
    return _ORDER[f.verdict], int(f.strength)


@lru_cache(maxsize=65_536)
def _negated(text: str) -> bool:
    return any(w in NEGATIONS for w in words(text))


@lru_cache(maxsize=65_536)
def _said(text: str) -> frozenset[str]:
    """The content words of ``text`` without change markers and fillers."""
    return frozenset(_content(words(text)) - MARKER_WORDS - FILLERS)


@lru_cache(maxsize=65_536)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(w for w in _said(text) if _is_value_token(w))


def may_be_clear(old: str, new: str) -> bool:
    """A cheap test that :func:`check` can find a clear conflict: only a shared attribute or
    a negation on one side can make one (a write checks it before the full rules for pairs
    outside the similarity band)."""
    attrs_old, negated_old = _slots(old)
    attrs_new, negated_new = _slots(new)
    return not attrs_old.isdisjoint(attrs_new) or negated_old != negated_new


@lru_cache(maxsize=65_536)
def _slots(text: str) -> tuple[frozenset[str], bool]:
    """The attributes of the claims of ``text`` and whether it is negated."""
    return frozenset(c.attribute for c in claims(text)), _negated(text)


@lru_cache(maxsize=65_536)
def _every_clause_claims(text: str) -> bool:
    """Whether each clause of ``text`` was read as a claim (so none says something else)."""
    return len(claims(text)) == len(clauses(text.replace("’", "'")))


_STATE_MARKERS = frozenset(
    {"switched to", "moved to", "changed to", "now", "nowadays", "these days", "became"}
)
"""Change markers after which the clause states what holds now ("switched to zed": the editor
is zed), unlike "stopped", "switched from", "no longer", "instead"."""
_MOOD = frozenset(
    """want wants wanted plan plans planned planning going will would might may could should
    hope hopes hoped try tries tried decide decided decides considering used until quit former
    formerly previously ago once was were had lived worked resided""".split()  # noqa: SIM905
)
"""Words that make a claim a plan, a wish or the past ("plans to live in Paris", "worked at
Google until ..."): a restatement must say them as the older fact does."""


@lru_cache(maxsize=65_536)
def _mood(text: str) -> frozenset[str]:
    return frozenset(w for w in words(text) if w in _MOOD)


def _states_now(c: Claim) -> bool:
    return c.marker is None or c.marker in _STATE_MARKERS


def restates(old: str, new: str) -> bool:
    """Whether ``new`` says nothing ``old`` does not: each of its clauses is a claim, and each
    claim has one in ``old`` on the same slot (the same named subject, the same attribute) with
    the same value, polarity and numbers, its value words among the older claim's ("Mateo works
    at Stark, actually" restates "Mateo started working at Stark this spring"). Both texts must
    be negated alike anywhere ("drinks no alcohol" is no restatement of "drinks alcohol"), say
    the same plan, wish or past-tense words ("plans to live in", "worked at"), and state what
    holds now (no "stopped", "switched from", "no longer"). Such a fact is a duplicate however
    few words the two share; a new detail, a changed value or a clause that is not a claim
    makes it none."""
    cn = claims(new)
    if not cn or not _every_clause_claims(new):
        return False
    if _negated(old) != _negated(new) or _mood(old) != _mood(new):
        return False
    co = [o for o in claims(old) if o.subject and _states_now(o)]
    return all(
        c.subject
        and _states_now(c)
        and any(
            o.attribute == c.attribute
            and o.subject == c.subject
            and o.negated == c.negated
            and o.core == c.core
            and c.value <= o.value
            and _values(o) == _values(c)
            for o in co
        )
        for c in cn
    )


RESTATED = Finding(Verdict.NONE, "restates it")
"""The finding of a merge by :func:`restates` (named in the merge's reason)."""


def check(old: str, new: str) -> Finding:
    """Does ``new`` contradict ``old``? Call it only for pairs that are already similar."""
    co, cn = claims(old), claims(new)
    found = _by_claims(co, cn)
    if found is not None:
        return found
    # no slot in common: never a conflict; only tell apart facts that must not be merged
    so, sn = _said(old), _said(new)
    only_old, only_new = so - sn, sn - so
    neg_old, neg_new = _negated(old), _negated(new)
    if neg_old != neg_new and not only_old and not only_new:
        side = "new" if neg_new else "old"
        return Finding(
            Verdict.CLEAR, "negation", f"only the {side} fact is negated", Strength.PLAIN
        )
    nums_old, nums_new = _numbers(old), _numbers(new)
    if nums_old - nums_new and nums_new - nums_old:
        detail = f"{_show(nums_old - nums_new)} -> {_show(nums_new - nums_old)}"
        return Finding(Verdict.DISTINCT, "different numbers or dates", detail)
    names_old, names_new = _names(old) & only_old, _names(new) & only_new
    if (names_old or names_new) and only_old and only_new:
        return Finding(
            Verdict.DISTINCT, "different names", f"{_show(only_old)} vs {_show(only_new)}"
        )
    if only_old and only_new:
        # words swapped, not added: "watched a film on bonsai" / "... on sourdough"
        return Finding(
            Verdict.DISTINCT, "different details", f"{_show(only_old)} vs {_show(only_new)}"
        )
    return NO_CONFLICT
