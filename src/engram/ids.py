"""Identifiers: time-sortable, random, URL-safe (ULID layout, Crockford base32)."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_PAIRS = tuple(a + b for a in _ALPHABET for b in _ALPHABET)
"""Two characters per 10 bits: an id is 13 lookups, not 26 steps."""
_SHIFTS = tuple(range(120, -1, -10))


def new_id(prefix: str = "") -> str:
    """A 26-character id whose first 10 characters sort by creation time (milliseconds)."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return prefix + "".join([_PAIRS[(value >> s) & 1023] for s in _SHIFTS])
