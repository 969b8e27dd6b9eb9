"""Contradiction: rules (no LLM) that decide whether a new fact takes back an older one.

A pair of similar facts is compared word by word. A rule that fires gives a *clear* conflict
(the older fact is superseded); a pair that only differs in wording, with no rule to say which
is right, is *unclear* (it goes to the review queue); anything else is no conflict.

Rules, in order:
- negation: one side is negated ("not", "never", "no longer", "doesn't" ...), the other is not;
- a change marker in the new fact ("now", "switched to", "moved to", "no longer", "instead" ...)
  while something of the old fact is gone;
- changed numbers or dates in a statement ("X is 3" / "X is 4"), everything else equal;
- the same subject and attribute (the words before the verb) with a different value, for
  single-valued verbs ("lives in", "is", "prefers"); a many-valued one ("loves", "uses",
  "has") adds a value instead.

Swapped words in the subject ("Alice uses vim" / "Bob uses vim"), swapped names, or numbers
that differ anywhere else make the pair *distinct*: two facts about different things, never
merged nor superseded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from engram.text import STOPWORDS, words


class Verdict(StrEnum):
    NONE = "none"
    UNCLEAR = "unclear"
    CLEAR = "clear"
    DISTINCT = "distinct"
    """Different subjects ("Alice uses vim" / "Bob uses vim"): neither the same fact nor a
    conflict, however many words they share."""


@dataclass(frozen=True, slots=True)
class Finding:
    verdict: Verdict
    rule: str = ""
    detail: str = ""

    @property
    def reason(self) -> str:
        return f"{self.rule}: {self.detail}" if self.detail else self.rule


NO_CONFLICT = Finding(Verdict.NONE)

NEGATIONS = frozenset(
    """not no never nor neither nobody nothing none without cannot can't don't doesn't didn't
    isn't aren't wasn't weren't won't wouldn't shouldn't hasn't haven't hadn't couldn't
    mustn't""".split()  # noqa: SIM905
)
CHANGE_MARKERS = (
    "no longer",
    "not anymore",
    "anymore",
    "any more",
    "switched to",
    "switched from",
    "switched",
    "moved to",
    "moved",
    "changed to",
    "changed",
    "now",
    "nowadays",
    "these days",
    "instead",
    "stopped",
    "replaced",
    "became",
    "from now on",
)
_MARKER_WORDS = frozenset(w for m in CHANGE_MARKERS for w in m.split())
_VERBS = frozenset(
    """is are was were am be uses use using prefers prefer likes like loves love lives live
    works work runs run has have wants want costs cost equals means set defaults located based
    called named drives drive owns own speaks speak eats eat drinks drink starts start
    begins begin ends end happens happen meets meet""".split()  # noqa: SIM905
)
_MANY_VALUED = frozenset(
    """uses use using likes like loves love enjoys enjoy has have wants want owns own speaks
    speak eats eat drinks drink""".split()  # noqa: SIM905
)
"""Verbs whose attribute holds many values at once: "loves chess" does not take back "loves
climbing" (only a change marker or a negation does)."""
_MONTHS = frozenset(
    """january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday""".split()  # noqa: SIM905
)
_NUMBER_RE = re.compile(r"\d")


def _norm(word: str) -> str:
    """A crude stem, enough to see 'likes' and 'like' or "alice's" and 'alice' as one word."""
    word = word.removesuffix("'s")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _content(ws: list[str]) -> set[str]:
    return {_norm(w) for w in ws if w not in STOPWORDS and w not in NEGATIONS}


def _is_value_token(word: str) -> bool:
    return bool(_NUMBER_RE.search(word)) or word in _MONTHS


def _marker(text_words: list[str]) -> str | None:
    joined = f" {' '.join(text_words)} "
    return next((m for m in CHANGE_MARKERS if f" {m} " in joined), None)


@dataclass(frozen=True, slots=True)
class _Statement:
    """A sentence split at its first stative verb: subject + attribute, then the value."""

    key: set[str]
    value: set[str]
    core: str
    verb: str
    """The value's first content word: 'green' in 'is green, actually'."""


def _split(ws: list[str]) -> _Statement | None:
    for i, w in enumerate(ws):
        if w in _VERBS and i > 0:
            key = _content(ws[:i]) - _MARKER_WORDS
            rest = [_norm(x) for x in ws[i + 1 :] if x not in STOPWORDS | _MARKER_WORDS]
            if key and rest:
                return _Statement(key, set(rest), rest[0], w)
            return None
    return None


_NAME_RE = re.compile(r"[^\W\d_]{2,}(?:['’][^\W\d_]+)?")


def _names(text: str) -> set[str]:
    """Capitalised words after the first: names of people, places, products."""
    tokens = _NAME_RE.findall(text)[1:]
    return {_norm(t.lower().replace("’", "'")) for t in tokens if t[0].isupper()}


def _other_subject(
    key_old: set[str], key_new: set[str], only_old: set[str], only_new: set[str]
) -> bool:
    """Words were swapped (not just added or moved) and the swap is in the subject."""
    return bool(
        key_old - key_new and key_new - key_old and only_old & key_old and only_new & key_new
    )


def _show(ws: set[str]) -> str:
    return ", ".join(sorted(ws))


def check(old: str, new: str) -> Finding:
    """Does ``new`` contradict ``old``? Call it only for pairs that are already similar."""
    wo, wn = words(old), words(new)
    so, sn = _content(wo) - _MARKER_WORDS, _content(wn) - _MARKER_WORDS
    only_old, only_new = so - sn, sn - so

    neg_old = any(w in NEGATIONS for w in wo)
    neg_new = any(w in NEGATIONS for w in wn)
    if neg_old != neg_new and len(only_old) <= 2 and len(only_new) <= 2:
        side = "new" if neg_new else "old"
        return Finding(Verdict.CLEAR, "negation", f"only the {side} fact is negated")

    st_old, st_new = _split(wo), _split(wn)
    if st_old and st_new and _other_subject(st_old.key, st_new.key, only_old, only_new):
        return Finding(
            Verdict.DISTINCT,
            "different subject",
            f"{_show(st_old.key - st_new.key)} vs {_show(st_new.key - st_old.key)}",
        )

    marker = _marker(wn)
    if marker is not None and _marker(wo) is None and only_old:
        return Finding(Verdict.CLEAR, "change marker", f"{marker!r} replaces {_show(only_old)}")

    nums_old = {w for w in so if _is_value_token(w)}
    nums_new = {w for w in sn if _is_value_token(w)}
    if nums_old - nums_new and nums_new - nums_old:
        detail = f"{_show(nums_old - nums_new)} -> {_show(nums_new - nums_old)}"
        only_numbers = not (only_old - nums_old) and not (only_new - nums_new)
        if st_old and st_new and only_numbers:
            return Finding(Verdict.CLEAR, "changed number or date", detail)
        # no stated attribute ("bought 3 apples" / "bought 5 apples"), or more than the
        # number changed: two different things, never one fact said twice
        return Finding(Verdict.DISTINCT, "different numbers or dates", detail)

    if (
        st_old
        and st_new
        and st_old.key == st_new.key
        and st_old.core != st_new.core
        and st_old.value - st_new.value
        and st_new.value - st_old.value
    ):
        if st_new.verb in _MANY_VALUED:
            return Finding(
                Verdict.DISTINCT,
                "another value of a many-valued attribute",
                f"{_show(st_old.key)} {st_new.verb}: {st_old.core}, {st_new.core}",
            )
        return Finding(
            Verdict.CLEAR,
            "same subject and attribute, different value",
            f"{_show(st_old.key)}: {st_old.core} -> {st_new.core}",
        )

    names_old, names_new = _names(old) & only_old, _names(new) & only_new
    if names_old and names_new:
        return Finding(
            Verdict.DISTINCT, "different names", f"{_show(names_old)} vs {_show(names_new)}"
        )

    if only_old and only_new:
        return Finding(
            Verdict.UNCLEAR,
            "different wording",
            f"{_show(only_old)} vs {_show(only_new)}",
        )
    return NO_CONFLICT
