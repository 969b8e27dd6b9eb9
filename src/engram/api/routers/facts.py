"""/api/v1/facts: atomic memories."""

from __future__ import annotations

from engram.api.routers._memories import memory_router
from engram.api.schemas import NewFact
from engram.models import Layer

router = memory_router(Layer.FACT, NewFact, "facts")
