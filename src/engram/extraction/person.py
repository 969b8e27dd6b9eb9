"""Rewriting a first-person sentence in the third person about its speaker, cheaply:
"I prefer tabs" → "Caroline prefers tabs", "my sister moved" → "Caroline's sister moved"."""

from __future__ import annotations

import re

_KEEP = frozenset(
    """can could will would should shall might must may did had was wasn't didn't couldn't
    wouldn't shouldn't won't can't cannot""".split()  # noqa: SIM905
)
_IRREGULAR = {
    "am": "is",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
    "go": "goes",
    "'m": "is",
    "'ve": "has",
}
_ADVERBS = frozenset(
    """really also just always never usually often still actually totally absolutely
    definitely sometimes recently finally truly mostly generally normally rarely only even
    already kinda mainly now currently then later first again probably honestly basically
    literally hardly barely seriously typically occasionally frequently constantly
    personally""".split()  # noqa: SIM905
)
_PAST_IRREGULAR = frozenset(
    """went got made took saw said came gave found thought told became left felt brought
    began kept held wrote stood heard meant met ran paid sat spoke lost grew drew chose
    bought caught taught fought sold sent spent built lent read led fell knew threw flew
    wore won drove rode ate drank sang swam forgot understood began""".split()  # noqa: SIM905
)
_TOKEN_RE = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?|['’][a-z]+|\s+|[^\sA-Za-z]+")


def third_person_verb(verb: str) -> str:
    """The third-person singular present of a verb given after 'I' (past tenses unchanged)."""
    low = verb.lower().replace("’", "'")
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _KEEP or low in _PAST_IRREGULAR or low.endswith("ed") or low.endswith("n't"):
        return verb
    if re.search(r"(s|x|z|ch|sh|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _possessive(name: str) -> str:
    return name + ("'" if name.endswith("s") else "'s")


_SUBJECTS = frozenset({"i", "we", "you", "they", "he", "she", "it"})


def to_third_person(sentence: str, speaker: str) -> str:
    """``sentence`` about ``speaker`` instead of "I"; other pronouns of the speaker follow."""
    text = sentence.replace("’", "'")
    text = re.sub(r"\bI'm\b", "I am", text)
    text = re.sub(r"\bI've\b", "I have", text)
    text = re.sub(r"\bI'll\b", "I will", text)
    text = re.sub(r"\bI'd\b", "I would", text)
    tokens = _TOKEN_RE.findall(text)
    out: list[str] = []
    conjugate_next = False
    first_word = True
    words: list[str] = []  # the words so far, lowercased
    for tok in tokens:
        if tok.isspace() or not re.match(r"[A-Za-z']", tok):
            out.append(tok)
            continue
        low = tok.lower()
        if tok == "I":
            out.append(speaker)
            # "My wife and I use Linux": a plural subject keeps the verb as it is
            joint = bool(words) and words[-1] == "and" and not _SUBJECTS & set(words)
            conjugate_next = not (joint and len(words) <= 4)
        elif conjugate_next:
            if low in _ADVERBS:
                out.append(tok)
                continue
            out.append(third_person_verb(tok))
            conjugate_next = False
        elif low == "my":
            out.append(_possessive(speaker) if first_word else "their")
        elif low == "me":
            out.append("them")
        elif low == "myself":
            out.append("themselves")
        elif low == "mine":
            out.append("theirs")
        else:
            out.append(tok)
        first_word = False
        words.append(low)
    result = "".join(out).strip()
    return result[:1].upper() + result[1:]
