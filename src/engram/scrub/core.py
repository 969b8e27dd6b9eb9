"""The scrubbing loop itself, over the patterns of :mod:`engram.scrub.patterns`: standard library
only and nothing imported up front (``re`` comes with the first pattern a text may hold), so the
hook client, a process that lives for one event, pays only for what its text needs.
:class:`engram.scrub.Scrubber` adds the site's patterns and allowlist around it."""

from __future__ import annotations

from engram.scrub.patterns import Pattern, fold

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Iterable

PRIVATE = "private"
"""The kind counted for a dropped ``<private>…</private>`` span (it leaves no marker)."""


MARKER_START = "[REDACTED:"
"""How every marker starts (a text cut short must not split one)."""


def marker(kind: str) -> str:
    """What replaces a secret of ``kind``."""
    return f"{MARKER_START}{kind}]"


def scrub_text(
    text: str, patterns: Iterable[Pattern], allowed: Callable[[str], bool] | None = None
) -> tuple[str, dict[str, int]]:
    """``text`` with every match of ``patterns`` replaced by its marker (unless ``allowed``
    says the secret or the whole match may stay) and ``<private>`` spans dropped; the count
    of each kind removed."""
    counts: dict[str, int] = {}
    folded = fold(text)
    if "<" in text and "private" in folded:
        text, dropped = drop_private(text)
        if dropped:
            counts[PRIVATE] = dropped
            folded = fold(text)
    for pattern in patterns:
        if not pattern.may_match(text, folded):  # a cheap literal check first
            continue
        kind = pattern.kind

        def replace(m: re.Match[str], kind: str = kind) -> str:
            has_group = "secret" in m.re.groupindex and m.group("secret") is not None
            secret = m.group("secret") if has_group else m.group(0)
            if allowed is not None and (allowed(secret) or allowed(m.group(0))):
                return m.group(0)
            counts[kind] = counts.get(kind, 0) + 1
            if not has_group:
                return marker(kind)
            start, end = m.span("secret")
            whole = m.group(0)
            return whole[: start - m.start()] + marker(kind) + whole[end - m.start() :]

        out = pattern.regex.sub(replace, text)
        if out != text:  # a marker may bring a needle: the next checks read the new text
            text, folded = out, fold(out)
    return text, dict(sorted(counts.items()))


_private_tag: re.Pattern[str] | None = None


def drop_private(text: str) -> tuple[str, int]:
    """Remove ``<private>…</private>`` spans (nested ones count once; an unclosed one runs to
    the end of the text); linear in the text."""
    global _private_tag
    if _private_tag is None:
        import re

        _private_tag = re.compile(r"<(/?)private\s*>", re.IGNORECASE)
    out: list[str] = []
    depth = 0
    pos = 0
    spans = 0
    for tag in _private_tag.finditer(text):
        closing = tag.group(1) == "/"
        if depth == 0:
            out.append(text[pos : tag.start()])
            if closing:  # a stray closing tag: dropped, nothing else
                pos = tag.end()
                continue
            spans += 1
        depth = depth - 1 if closing else depth + 1
        pos = tag.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out), spans
