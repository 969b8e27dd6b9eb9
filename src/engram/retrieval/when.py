"""The time a query names: "in July 2023", "on October 13, 2023", "in June", "in 2022",
"2023-10-13", "yesterday", "last week", "last month".

A memory recorded within that time is what such a query is about ("what did we decide in
March?"), so search folds a match into relevance as a third provenance signal beside author and
thread (``retrieval.provenance``). Times are read in UTC; a month or day without a year matches
that month or day of any year. A query naming no time leaves relevance unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_YEAR = r"(?:19|20)\d\d"
_ISO = re.compile(rf"\b({_YEAR})-(\d\d)(?:-(\d\d))?\b")
# "October 13, 2023", "October 13th 2023", "October 2023", "October" — "may" only with a day
# or year beside it, so the verb is not read as a month
_MONTH_FIRST = re.compile(
    rf"\b({_MONTH})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?(?:,?\s+({_YEAR}))?\b", re.IGNORECASE
)
_DAY_FIRST = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?(?:,?\s+({_YEAR}))?\b",
    re.IGNORECASE,
)
_LONE_YEAR = re.compile(rf"\b(?:in|during|of|since|from)\s+({_YEAR})\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(yesterday|today|this (?:week|month|year)|last (?:week|month|year)|"
    r"(\d{1,2}|a|one|two|three) (day|week|month)s? ago)\b",
    re.IGNORECASE,
)
_SMALL = {"a": 1, "one": 1, "two": 2, "three": 3}


@dataclass(frozen=True, slots=True)
class Named:
    """One time a query names: calendar fields (any missing field matches anything) or, for
    relative times, a range."""

    year: int | None = None
    month: int | None = None
    day: int | None = None
    start: datetime | None = None
    end: datetime | None = None

    def contains(self, at: datetime) -> bool:
        at = at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
        if self.start is not None and self.end is not None:
            return self.start <= at < self.end
        if self.year is not None and at.year != self.year:
            return False
        if self.month is not None and at.month != self.month:
            return False
        return self.day is None or at.day == self.day


def named_times(query: str, now: datetime) -> list[Named]:
    """Every time ``query`` names, relative ones resolved against ``now``."""
    found: list[Named] = []
    taken: list[tuple[int, int]] = []

    def free(span: tuple[int, int]) -> bool:
        return all(span[1] <= s or span[0] >= e for s, e in taken)

    for m in _ISO.finditer(query):
        month = int(m.group(2))
        day = int(m.group(3)) if m.group(3) else None
        if 1 <= month <= 12 and (day is None or 1 <= day <= 31):
            found.append(Named(int(m.group(1)), month, day))
            taken.append(m.span())
    for m in _DAY_FIRST.finditer(query):
        if free(m.span()) and 1 <= int(m.group(1)) <= 31:
            year = int(m.group(3)) if m.group(3) else None
            found.append(Named(year, _MONTHS[m.group(2).lower()], int(m.group(1))))
            taken.append(m.span())
    for m in _MONTH_FIRST.finditer(query):
        name, day_text, year_text = m.group(1).lower(), m.group(2), m.group(3)
        if not free(m.span()) or (name == "may" and not (day_text or year_text)):
            continue
        day = int(day_text) if day_text and 1 <= int(day_text) <= 31 else None
        found.append(Named(int(year_text) if year_text else None, _MONTHS[name], day))
        taken.append(m.span())
    for m in _LONE_YEAR.finditer(query):
        if free(m.span(1)):
            found.append(Named(int(m.group(1))))
    found.extend(_relative(m, now) for m in _RELATIVE.finditer(query))
    return found


def _relative(m: re.Match[str], now: datetime) -> Named:
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    phrase = m.group(1).lower()
    if phrase == "today":
        return Named(start=today, end=today + timedelta(days=1))
    if phrase == "yesterday":
        return Named(start=today - timedelta(days=1), end=today)
    if m.group(2):
        n = int(m.group(2)) if m.group(2).isdigit() else _SMALL[m.group(2).lower()]
        days = {"day": 1, "week": 7, "month": 30}[m.group(3).lower()] * n
        centre = today - timedelta(days=days)
        slack = timedelta(days=max(1, days // 4))
        return Named(start=centre - slack, end=centre + slack + timedelta(days=1))
    unit = phrase.split()[1]
    span = {"week": 7, "month": 31, "year": 366}[unit]
    if phrase.startswith("this"):
        return Named(start=today - timedelta(days=span), end=today + timedelta(days=1))
    return Named(start=today - timedelta(days=2 * span), end=today + timedelta(days=1))


def matches(times: Sequence[Named], at: datetime) -> bool:
    return any(t.contains(at) for t in times)
