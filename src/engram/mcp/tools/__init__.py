"""The MCP tools, one module per concept; each calls the service layer and nothing else."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from engram.mcp.binding import Binding
from engram.mcp.tools import (
    context,
    environments,
    episodes,
    extraction,
    handoffs,
    lifecycle,
    memories,
    profile,
    providers,
    sessions,
    soul,
)

MODULES = (
    context,
    memories,
    episodes,
    soul,
    environments,
    lifecycle,
    extraction,
    sessions,
    profile,
    providers,
    handoffs,
)


def register_all(server: MCPServer[Any], binding: Binding) -> None:
    for module in MODULES:
        module.register(server, binding)
