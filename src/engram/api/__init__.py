"""The REST API: ``create_app(engram, settings)`` builds the FastAPI app ``engram serve`` runs."""

from engram.api.app import API_PREFIX, create_app
from engram.config import ServerSettings

__all__ = ["API_PREFIX", "ServerSettings", "create_app"]
