"""/api/v1/episodes: summaries of sessions and conversations."""

from __future__ import annotations

from engram.api.routers._memories import memory_router
from engram.api.schemas import NewEpisode
from engram.models import Layer

router = memory_router(Layer.EPISODE, NewEpisode, "episodes")
