"""Pydantic models built from values that are already valid (computed by our own code or read
back from the store), skipping validation and ``model_construct``'s per-field default and alias
handling: several times cheaper, which matters for the hundreds of small models one context
assembly builds (each item's breakdown is six of them)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_FIELDS: dict[type[BaseModel], frozenset[str]] = {}


def construct(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` holding ``values``, which must name every field of ``cls`` with
    a valid value (otherwise: pydantic's own ``model_construct``, which fills defaults)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = frozenset(cls.model_fields)
    if values.keys() != fields:
        return cls.model_construct(**values)
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", set(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model
