"""The scrubber's literal pre-checks skip a pattern only where it cannot match: scrubbing with
them gives exactly what searching every pattern in every text gives (the reference below is the
same scrubber with its needles removed)."""

from __future__ import annotations

import random
import re

import pytest

from engram.scrub import Scrubber, ScrubConfig
from engram.scrub.patterns import BUILTIN, Pattern, fold
from tests.scrub_fixtures import fakes, planted_text
from tests.test_scrub import SURVIVORS

_UNICODE_FOLDS = {"i": "\u0130\u0131", "I": "\u0130\u0131", "s": "\u017f", "S": "\u017f"}
_UNICODE_FOLDS |= {"k": "\u212a", "K": "\u212a"}


def _reference(config: ScrubConfig | None = None) -> Scrubber:
    """The same scrubber searching every pattern in every text."""
    s = Scrubber(config)
    s.patterns = tuple(Pattern(p.kind, p.source, p.flags) for p in s.patterns)
    return s


_V = "Fk7a" * 6  # a value long enough for every pattern
_NAMES = [
    "Proxy-Authorization", "authorization", "X-Api-Key", "api-key", "x-auth-token",
    "x-access-token", "private-token", "x-amz-security-token", "x-goog-api-key", "x-vault-token",
    "ocp-apim-subscription-key", "x-csrf-token", "x-xsrf-token", "cookie", "set-cookie",
    "aws_secret_access_key", "secretaccesskey", "aws_session_token", "sessiontoken",
    "MY_API_KEY", "DB_TOKEN", "A_SECRET", "X_PASSWORD", "X_PASSWD", "X_PWD", "GCP_CREDENTIALS",
    "api_key", "apikey", "secret-key", "client_secret", "clientSecret", "access_token",
    "refresh-token", "authToken", "password", "passwd",
]  # fmt: skip
EXAMPLES = [f"{n}: {_V}" for n in _NAMES] + [f"{n}={_V}" for n in _NAMES if "cookie" not in n] + [
    "ghp_" + _V + "x" * 8, "gho_" + _V + "x" * 8, "ghu_" + _V + "x" * 8, "ghs_" + _V + "x" * 8,
    "ghr_" + _V + "x" * 8, "rk_test_" + _V, "xoxp-" + _V, "bearer " + _V, "ASIA" + "B" * 16,
    "aiza" + "c" * 35, "https://u:" + _V + "@h",
]  # fmt: skip
"""Each alternative of each pattern, once."""


def _variants(text: str, rng: random.Random) -> list[str]:
    odd = "".join(rng.choice(_UNICODE_FOLDS.get(c, c)) if rng.random() < 0.5 else c for c in text)
    return [text, text.upper(), text.lower(), text.swapcase(), odd, f"<x>{text}</x> {text}"]


def _pieces() -> list[str]:
    """Fragments of every needle and of the text around a secret, to glue at random."""
    out = [n for p in BUILTIN for n in p.needles]
    out += [n.upper() for n in out] + [n[: len(n) // 2] for n in out] + [n[1:] for n in out]
    out += ["_", "-", ":", "=", " ", "\t", '"', "'", "@", "/", ".", "\n", "[REDACTED:", "]"]
    out += ["Fk7" * 8, "A1" * 12, "ab" * 20, "0123456789", "eyJhbGciOi", "//u:p@h", "BEGIN"]
    out += ["AWS_", "ACCESS", "_KEY", "Bearer ", "sk_live_", "AA" + "x" * 33, "123456789"]
    return out


def _corpus() -> list[str]:
    rng = random.Random(20261201)
    texts = [f.text for f in fakes()] + [planted_text()[0]] + SURVIVORS + EXAMPLES
    pieces = _pieces()
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(2, 12))) for _ in range(3000)]
    return [v for t in texts for v in _variants(t, rng)]


def test_prefilter_never_changes_a_result() -> None:
    fast, slow = Scrubber(), _reference()
    for text in _corpus():
        assert fast.scrub(text) == slow.scrub(text), text


def test_a_pattern_never_matches_without_its_needle() -> None:
    for text in _corpus():
        folded = fold(text)
        for p in BUILTIN:
            if p.regex.search(text):
                assert p.may_match(text, folded), (p.kind, text)


@pytest.mark.parametrize("text", EXAMPLES)
def test_each_example_is_a_secret(text: str) -> None:
    assert Scrubber().scrub(text)[1], text


def test_case_insensitive_patterns_check_folded_needles() -> None:
    for p in BUILTIN:
        insensitive = bool(p.flags & re.IGNORECASE) or "(?i" in p.source
        assert p.needles, p.kind
        assert p.fold == insensitive, p.kind
        if p.fold:
            assert all(n == n.lower() for n in p.needles), p.kind


@pytest.mark.parametrize("letter", sorted(_UNICODE_FOLDS))
def test_fold_covers_the_letters_a_case_insensitive_regex_matches(letter: str) -> None:
    for odd in _UNICODE_FOLDS[letter]:
        assert re.fullmatch(letter, odd, re.IGNORECASE)
        assert fold(odd) == letter.lower()


def test_site_patterns_and_allowlist_are_unchanged_by_the_prefilter() -> None:
    config = ScrubConfig(extra=[("internal", r"itk_[a-z0-9]{8,}")], allow_regex=[r"^sk_test_"])
    fast, slow = Scrubber(config), _reference(config)
    for text in _corpus()[:3000]:
        assert fast.scrub(text + " itk_abcdefgh1") == slow.scrub(text + " itk_abcdefgh1")
