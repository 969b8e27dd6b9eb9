"""The service layer: the one place behaviour lives. REST, MCP, CLI and the dashboard call it."""

from engram.service.engram import Engram

__all__ = ["Engram"]
