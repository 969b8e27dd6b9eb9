"""Word splitting (``engram.text``): an ASCII text is split without the regular expression;
every word function must give exactly what the expression gives (the same words in the same
order, so sets built from them iterate alike), on texts mixing letters, digits, underscores,
both apostrophes, punctuation, control and non-ASCII characters."""

from __future__ import annotations

import random
import re

from engram import text

_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)


def _reference_words(s: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD_RE.findall(s.lower())]


def _texts() -> list[str]:
    rng = random.Random(5)
    alphabet = "abZ19 '_-’.,;\t\n\x1f\x00é\u00a0ß'’"
    out = ["", "'", "rock'n'roll", "Alice's  editor_name", "don't'", "x'_y", "'s s' ''a"]
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(20000)]
    return out


def test_every_word_function_matches_the_expression() -> None:
    for s in _texts():
        ref = _reference_words(s)
        assert text.words(s) == ref, repr(s)
        low = s.lower().replace("’", "'")
        assert text._word_tokens(low) == _WORD_RE.findall(low), repr(s)
        assert list(text.distinct_content_words(s)) == list(
            set(_WORD_RE.findall(low)).difference(text.STOPWORDS)
        ), repr(s)
        assert text.content_word_frozenset(s) == frozenset(ref) - text.STOPWORDS, repr(s)
        assert text.content_words(s) == [w for w in ref if w not in text.STOPWORDS]


def test_every_ascii_character_splits_as_the_expression_does() -> None:
    for c in map(chr, range(128)):
        for s in (f"a{c}b", f"{c}a", f"a{c}", f"a'{c}b", f"a{c}'b"):
            assert text._word_tokens(s) == _WORD_RE.findall(s), repr(s)
