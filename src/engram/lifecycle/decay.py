"""Decay: how much a memory is still worth keeping in view, and when to flag it.

Retention follows the shape used by ai-memory, with a half-life per layer instead of one rate::

    retention = importance * 0.5 ** (age / h) + w * ln(1 + uses) * 0.5 ** (idle / h)

where ``age`` counts days since the memory was made, ``idle`` days since it was last read or
written, ``uses`` its reads plus reinforcements, ``h`` the layer's half-life and ``w`` the
access weight. Pinned memories do not decay (retention 1). Nothing is ever deleted here: a
memory that is both unimportant and untouched is *flagged* for a person to look at.
"""

from __future__ import annotations

import math
from datetime import datetime

from engram.lifecycle.config import LifecycleConfig
from engram.models import MESSAGE_CATEGORY, Memory

_DAY = 86_400.0


def last_touched(memory: Memory) -> datetime:
    """The last read or write, or when Engram stored it if that is later: a conversation
    delivered today keeps the times it was said (``updated_at``), but it was written today."""
    touched = memory.updated_at
    for other in (memory.last_accessed_at, memory.recorded_at):
        if other is not None and other > touched:
            touched = other
    return touched


def idle_days(memory: Memory, now: datetime) -> float:
    return max(0.0, (now - last_touched(memory)).total_seconds() / _DAY)


def retention(memory: Memory, now: datetime, cfg: LifecycleConfig) -> float:
    if memory.pinned:
        return 1.0
    half_life = cfg.half_life(memory.layer)
    age = max(0.0, (now - memory.created_at).total_seconds() / _DAY)
    uses = memory.access_count + memory.reinforcement_count
    score = memory.importance * 0.5 ** (age / half_life)
    score += cfg.access_weight * math.log1p(uses) * 0.5 ** (idle_days(memory, now) / half_life)
    return float(score)


def should_flag(memory: Memory, now: datetime, cfg: LifecycleConfig) -> bool:
    """Noise only: importance below ``flag_importance``, untouched (no write, no read) for
    ``flag_idle_days``, read or reinforced fewer than ``flag_max_uses`` times. Never a pinned
    memory, nor one at ``protect_importance`` or above."""
    return (
        not memory.pinned
        and memory.importance < min(cfg.flag_importance, cfg.protect_importance)
        and idle_days(memory, now) >= cfg.flag_idle_days
        and memory.access_count + memory.reinforcement_count < cfg.flag_max_uses
    )


def flag_reason(memory: Memory, now: datetime, cfg: LifecycleConfig) -> str:
    """Why a memory was flagged, with every figure the rule looked at."""
    read = memory.last_accessed_at
    last_read = "never read" if read is None else f"last read {read.date().isoformat()}"
    return (
        f"decayed: importance {memory.importance:.2f} < {cfg.flag_importance}, untouched for "
        f"{idle_days(memory, now):.0f} days (since {last_touched(memory).date().isoformat()}; "
        f">= {cfg.flag_idle_days:.0f}), {last_read}, "
        f"{memory.access_count} reads and {memory.reinforcement_count} reinforcements "
        f"(< {cfg.flag_max_uses}), not pinned; retention {retention(memory, now, cfg):.2f}; "
        "flagged for removal, nothing deleted"
    )


def is_cold(memory: Memory, now: datetime, cfg: LifecycleConfig) -> bool:
    """An episode that has faded: retention below ``cold_retention`` and idle long enough.
    A delivered message (category ``message``) is a record, never compacted."""
    return (
        not memory.pinned
        and memory.category != MESSAGE_CATEGORY
        and idle_days(memory, now) >= cfg.cold_min_idle_days
        and retention(memory, now, cfg) < cfg.cold_retention
    )
