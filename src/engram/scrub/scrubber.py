"""The scrubber: text in, text without secrets out, with a count of what was removed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from engram.scrub.core import PRIVATE, marker, scrub_text
from engram.scrub.patterns import BUILTIN, Pattern, fold

_KIND_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
__all__ = ["PRIVATE", "Redactions", "ScrubConfig", "Scrubber", "marker"]


@dataclass(frozen=True)
class ScrubConfig:
    """Site settings: extra patterns (kind name and regex) and an allowlist of strings, or
    regexes, whose matches must survive."""

    extra: Sequence[tuple[str, str]] = ()
    allow: Sequence[str] = ()
    allow_regex: Sequence[str] = ()


@dataclass(frozen=True)
class Redactions:
    """How many secrets of each kind were removed."""

    kinds: Mapping[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.kinds.values())

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def __add__(self, other: Redactions) -> Redactions:
        if not other:
            return self
        if not self:
            return other
        merged = dict(self.kinds)
        for kind, n in other.kinds.items():
            merged[kind] = merged.get(kind, 0) + n
        return Redactions(dict(sorted(merged.items())))

    @classmethod
    def merge(cls, many: Iterable[Redactions]) -> Redactions:
        out = cls()
        for r in many:
            out = out + r
        return out

    def as_dict(self) -> dict[str, int]:
        return dict(self.kinds)


NONE = Redactions(MappingProxyType({}))
_Needles = tuple[tuple[str, ...], tuple[str, ...]]
"""Nothing removed (shared: a write scrubs dozens of clean strings)."""


class Scrubber:
    """Replaces every secret the patterns find with ``[REDACTED:<kind>]`` and drops
    ``<private>…</private>`` spans (an unclosed one runs to the end of the text).

    Pure and thread-safe: compiled patterns only, no state between calls.
    """

    def __init__(self, config: ScrubConfig | None = None) -> None:
        config = config or ScrubConfig()
        extra = []
        for kind, source in config.extra:
            if not _KIND_RE.match(kind):
                raise ValueError(
                    f"scrub pattern name {kind!r} must be 1-40 lowercase letters, digits or '_', "
                    "starting with a letter"
                )
            try:
                extra.append(Pattern.compile(kind, source))
            except re.error as exc:
                raise ValueError(f"scrub pattern {kind!r} is not a valid regex: {exc}") from exc
        try:
            allow_res = [re.compile(a) for a in config.allow_regex]
        except re.error as exc:
            raise ValueError(f"scrub allow regex is not valid: {exc}") from exc
        # site patterns first: they name a shape more precisely than a generic rule would
        self.patterns: tuple[Pattern, ...] = (*extra, *BUILTIN)
        self._allow = frozenset(config.allow)
        self._allow_res = tuple(allow_res)
        self._clean: dict[str, None] = {}
        self._needles: tuple[tuple[Pattern, ...], _Needles | None] | None = None

    def _allowed(self, text: str) -> bool:
        return text in self._allow or any(r.search(text) for r in self._allow_res)

    def scrub(self, text: str) -> tuple[str, Redactions]:
        """``text`` without its secrets, and what was removed."""
        if text in self._clean:  # scrubbed before and found clean (a write scrubs twice)
            return text, NONE
        out, found = self._scrub(text)
        if not found.kinds and out == text and len(text) <= CLEAN_MEMO_CHARS:
            if len(self._clean) >= CLEAN_MEMO:
                self._clean.clear()
            self._clean[text] = None
        return out, found

    def _prefilter(self) -> _Needles | None:
        """Every pattern's needles, as they are and folded, when every pattern has some (for
        the patterns this scrubber holds now)."""
        cached = self._needles
        if cached is None or cached[0] is not self.patterns:
            patterns = self.patterns
            needles = None
            if all(p.needles for p in patterns):
                needles = (
                    tuple(n for p in patterns if not p.fold for n in p.needles),
                    tuple(n for p in patterns if p.fold for n in p.needles),
                )
            self._needles = cached = (patterns, needles)
        return cached[1]

    def _scrub(self, text: str) -> tuple[str, Redactions]:
        needles = self._prefilter()
        if needles is not None:  # most texts hold no needle of any pattern: none can match
            raw, folded_needles = needles
            folded = fold(text)
            if (
                not ("<" in text and "private" in folded)
                and not any(map(folded.__contains__, folded_needles))
                and not any(map(text.__contains__, raw))
            ):
                return text, NONE
        out, counts = scrub_text(text, self.patterns, self._allowed)
        return out, Redactions(counts)


CLEAN_MEMO = 8192
"""Texts remembered as clean (no secret), so a text scrubbed at the service and again at the
store boundary is read once."""
CLEAN_MEMO_CHARS = 4000
