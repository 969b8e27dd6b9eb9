"""How handoffs are delivered at session start (``ENGRAM_HANDOFF_MODE``,
``ENGRAM_HANDOFF_LIVE_MINUTES``), parsed where settings are loaded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from engram.errors import InvalidInput


class HandoffMode(StrEnum):
    CLAIM = "claim"
    """Session start accepts the handoff and injects it whole."""
    OFFER = "offer"
    """Session start injects only its id, agent and age; the agent accepts it through MCP."""
    OFF = "off"
    """Nothing is delivered at session start (handoffs are still made and can be accepted)."""


@dataclass(frozen=True)
class HandoffConfig:
    mode: HandoffMode = HandoffMode.CLAIM
    live_grace: timedelta = timedelta(minutes=10)
    """How long a handoff is held back while its source session is still live."""


def handoff_config(mode: str | None, live_minutes: str | None) -> HandoffConfig:
    """The configuration from the two variables' values (None: the default)."""
    try:
        chosen = HandoffMode((mode or HandoffMode.CLAIM.value).strip().lower())
    except ValueError as exc:
        allowed = ", ".join(m.value for m in HandoffMode)
        raise InvalidInput(
            f"ENGRAM_HANDOFF_MODE must be one of {allowed}, got {mode!r}", field="handoff_mode"
        ) from exc
    grace = timedelta(minutes=10)
    if live_minutes is not None:
        try:
            minutes = float(live_minutes)
        except ValueError:
            minutes = -1.0
        if not 0 <= minutes <= 24 * 60:
            raise InvalidInput(
                "ENGRAM_HANDOFF_LIVE_MINUTES must be a number of minutes from 0 to 1440, "
                f"got {live_minutes!r}",
                field="handoff_live_minutes",
            )
        grace = timedelta(minutes=minutes)
    return HandoffConfig(chosen, grace)
