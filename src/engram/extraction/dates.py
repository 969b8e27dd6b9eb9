"""Absolute dates beside relative ones: "last month", said on 2023-05-08, becomes
"last month (April 2023)", so a memory read months later still says when things happened.

Only expressions whose meaning is fixed by the day they were said are resolved (yesterday,
today, tomorrow, N days/weeks/months/years ago, last/this/next week/month/year, last/next
<weekday>); anything vaguer ("recently", "a while ago") is left as it is.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_COUNT = r"(\d{1,2}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)"
_PATTERN = re.compile(
    r"\b(?:"
    r"(?P<day>yesterday|today|tonight|tomorrow)"
    r"|(?P<n>" + _COUNT + r")\s+(?P<unit>day|week|month|year)s?\s+ago"
    r"|(?P<rel>last|this|next)\s+(?P<span>week|month|year|weekend|" + "|".join(_WEEKDAYS) + r")"
    r")\b(?!\s*\()",
    re.IGNORECASE,
)


def _day(d: date) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _month(year: int, month: int) -> str:
    while month < 1:
        month, year = month + 12, year - 1
    while month > 12:
        month, year = month - 12, year + 1
    return date(year, month, 1).strftime("%B %Y")


def _week_of(d: date) -> str:
    return "week of " + _day(d - timedelta(days=d.weekday()))


def resolve(match: re.Match[str], said: date) -> str | None:
    """The absolute date one relative expression stands for, said on ``said``."""
    groups = match.groupdict()
    if groups["day"]:
        offset = {"yesterday": -1, "tomorrow": 1}.get(groups["day"].lower(), 0)
        return _day(said + timedelta(days=offset))
    if groups["n"]:
        raw = groups["n"].lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        unit = groups["unit"].lower()
        if unit == "day":
            return _day(said - timedelta(days=n))
        if unit == "week":
            return _week_of(said - timedelta(weeks=n))
        if unit == "month":
            return _month(said.year, said.month - n)
        return str(said.year - n)
    step = {"last": -1, "this": 0, "next": 1}[groups["rel"].lower()]
    span = groups["span"].lower()
    if span == "month":
        return _month(said.year, said.month + step)
    if span == "year":
        return str(said.year + step)
    if span in ("week", "weekend"):
        return _week_of(said + timedelta(weeks=step))
    target = _WEEKDAYS.index(span)
    if step == 0:
        return _day(said + timedelta(days=target - said.weekday()))
    if step < 0:  # the latest such day before the day it was said
        return _day(said - timedelta(days=(said.weekday() - target) % 7 or 7))
    return _day(said + timedelta(days=(target - said.weekday()) % 7 or 7))


def annotate(text: str, said_at: datetime | date | None) -> str:
    """``text`` with each relative date followed by the absolute one in parentheses."""
    if said_at is None:
        return text
    said = said_at.date() if isinstance(said_at, datetime) else said_at

    def replace(match: re.Match[str]) -> str:
        absolute = resolve(match, said)
        return f"{match.group(0)} ({absolute})" if absolute else match.group(0)

    return _PATTERN.sub(replace, text)
