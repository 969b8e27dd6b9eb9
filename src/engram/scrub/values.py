"""Scrubbing structured values: every string inside a pydantic model, dataclass, dict (keys
too), list or tuple, recursively, except identity fields (ids, versions, enums, timestamps)."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from enum import Enum
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel

from engram.scrub.scrubber import NONE, Redactions, Scrubber

T = TypeVar("T")

KEEP = frozenset(
    {
        # identities and references: ids are generated or validated, never free text
        "id",
        "environment_id",
        "memory_id",
        "other_id",
        "conversation_id",
        "owner",
        "user_id",
        "key_id",
        "supersedes",
        "superseded_by",
        "merged_into",
        "targets",
        "before",
        "after",
        "external_id",
        "interface",
        "action",
        # what the scrubber itself reports
        "redactions",
    }
)
"""Field names never scrubbed, in any model."""

_KEEP_IN = {"SoulBlock": frozenset({"name"})}
"""Per model: a Soul block's name is its identity (a catalogue or validated custom name)."""


def scrub_value(scrubber: Scrubber, value: T) -> tuple[T, Redactions]:
    """``value`` with every free-text string scrubbed (the same object when nothing changed)."""
    found: list[Redactions] = []
    out = _walk(scrubber, value, found)
    return out, Redactions.merge(found) if found else NONE


_LEAVES = frozenset({type(None), bool, int, float, datetime})
"""Exact types with no free text, told apart before the general checks (most fields)."""


def _walk(s: Scrubber, value: Any, found: list[Redactions]) -> Any:
    if type(value) in _LEAVES:
        return value
    if isinstance(value, Enum) or value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        text, red = s.scrub(value)
        if red:
            found.append(red)
        return value if text == value else text
    if isinstance(value, BaseModel):
        update = _fields(s, value.__dict__, _kept_fields(type(value)), found)
        return value.model_copy(update=update) if update else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        update = _fields(s, fields, KEEP, found)
        return dataclasses.replace(value, **update) if update else value
    if isinstance(value, dict):
        items = [(_walk(s, k, found), _walk(s, v, found)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        new = [_walk(s, v, found) for v in value]
        if all(a is b for a, b in zip(new, value, strict=True)):
            return value
        return type(value)(new) if isinstance(value, tuple) else new
    return value  # datetimes, bytes, numbers: no free text


@cache
def _kept_fields(model: type[BaseModel]) -> frozenset[str]:
    """The names of a model's fields that hold no free text (:data:`KEEP`, and its own)."""
    return KEEP | _KEEP_IN.get(model.__name__, frozenset())


def _fields(
    s: Scrubber, values: dict[str, Any], keep: frozenset[str], found: list[Redactions]
) -> dict[str, Any]:
    """The scrubbed values of the fields (by name) that scrubbing changes."""
    update = {}
    kinds = _KINDS
    for name, old in values.items():
        # what _walk would do, one dict lookup for most fields (a write walks several models)
        kind = kinds.get(type(old))
        if kind is None:
            kind = _kind_of(type(old))
        if kind is _SKIP or name in keep:
            continue
        if kind is _TEXT:
            if not old:
                continue
            text, red = s.scrub(old)
            if red:
                found.append(red)
            if text != old:
                update[name] = text
            continue
        if kind is _EMPTY_WHEN_FALSY and not old:
            continue
        new = _walk(s, old, found)
        if new is not old:
            update[name] = new
    return update


_SKIP, _TEXT, _EMPTY_WHEN_FALSY, _OTHER = "skip", "text", "container", "other"
"""How :func:`_fields` treats a value of each exact type: no free text (leaves, enums), text,
a container holding nothing when empty, anything else (walked)."""
_KINDS: dict[type, str] = {
    **dict.fromkeys(_LEAVES, _SKIP),
    str: _TEXT,
    **dict.fromkeys((list, dict, tuple), _EMPTY_WHEN_FALSY),
}


def _kind_of(kind: type) -> str:
    """A type's treatment (:data:`_KINDS`), decided once per type."""
    treat = _SKIP if issubclass(kind, Enum) else _OTHER  # a str subclass is walked as text
    if len(_KINDS) < 1000:
        _KINDS[kind] = treat
    return treat
