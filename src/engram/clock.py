"""Time is injected (a ``Clock`` is any zero-argument callable returning an aware datetime), so
lifecycle rules can be tested with a fake clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)
