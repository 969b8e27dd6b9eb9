"""The MCP edge: Engram's memory for every MCP client, over stdio and Streamable HTTP."""

from engram.mcp.binding import Binding
from engram.mcp.server import INSTRUCTIONS, build_server

__all__ = ["INSTRUCTIONS", "Binding", "build_server"]
