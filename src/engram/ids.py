"""Identifiers: time-sortable, random, URL-safe (ULID layout, Crockford base32)."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def new_id(prefix: str = "") -> str:
    """A 26-character id whose first 10 characters sort by creation time (milliseconds)."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return prefix + "".join(reversed(chars))
