"""Plain-text helpers shared by keyword search, dedup and extraction: word splitting,
stopwords and content hashing. Dialect-neutral: no SQL here."""

from __future__ import annotations

import hashlib
import re

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
    mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll
    they're they've this those through to too under until up very was wasn't we we'd we'll
    we're we've were weren't what what's when when's where where's which while who who's
    whom why why's with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves also just did does s t""".split()  # noqa: SIM905
)


_ASCII_WORD_BYTES = bytes(
    c if (c < 128 and chr(c).isalnum()) or c == ord("'") else ord(" ") for c in range(256)
)
"""Every ASCII byte that cannot be part of a word (anything but a letter, digit or apostrophe)
mapped to a space."""


def _word_tokens(text: str) -> list[str]:
    """``_WORD_RE.findall(text)``. An ASCII text is split without the regular expression (its
    letters and digits are exactly the word characters): non-word bytes become spaces, then
    a plain split; only a piece holding an apostrophe goes through the expression, which
    finds the same words in it as in the whole text (the other characters never join)."""
    if not text.isascii():
        return _WORD_RE.findall(text)
    found = text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()
    if "'" in text:
        return [w for p in found for w in (_WORD_RE.findall(p) if "'" in p else (p,))]
    return found


def words(text: str) -> list[str]:
    """Lowercased words (letters and digits), apostrophes normalised."""
    low = text.lower()
    if "’" not in low:
        return _word_tokens(low)
    return [w.replace("’", "'") for w in _WORD_RE.findall(low)]


def content_words(text: str) -> list[str]:
    """Words without stopwords, in order, duplicates kept."""
    return [w for w in words(text) if w not in STOPWORDS]


def distinct_content_words(text: str) -> set[str]:
    """The set of :func:`content_words` (one regex pass, for many texts at once)."""
    low = text.lower()
    if "’" in low:
        low = low.replace("’", "'")
    return set(_word_tokens(low)).difference(STOPWORDS)


def content_word_frozenset(text: str) -> frozenset[str]:
    """The same words as :func:`distinct_content_words`, built as a frozenset in fewer steps
    (its iteration order may differ)."""
    low = text.lower()
    if "’" in low:
        low = low.replace("’", "'")
    return frozenset(_word_tokens(low)) - STOPWORDS


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
