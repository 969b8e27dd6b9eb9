"""Environments: one isolated memory space per project."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.mcp.binding import Binding
from engram.mcp.tools._common import READ, WRITE, tool
from engram.models import Environment


class Environments(BaseModel):
    environments: list[Environment]
    session_default: str | None = Field(
        description="The environment used when a call names none (null: 'default')."
    )
    names: dict[str, str] = Field(
        default_factory=dict,
        description="How to name each environment (by id) as `environment`: its name when it "
        "is yours, 'owner/name' when it is shared with you (a bare name writes only to yours).",
    )


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "List environments", READ)
    def list_environments() -> Environments:
        """The environments (projects) you can use: your own, then those shared with you."""
        actor = b.current_actor()
        envs = b.engram.environments
        default = b.environment
        if default is not None:  # kept by id: shown as the caller names it
            default = envs.label(envs.resolve(default, actor), actor)
        listed = envs.list(actor)
        names = {e.id: envs.label(e, actor) for e in listed}
        return Environments(environments=listed, session_default=default, names=names)

    @tool(server, "Create an environment", WRITE)
    def create_environment(
        name: Annotated[str, Field(description="Lowercase letters, digits, '_', '.', '-'.")],
        description: str = "",
    ) -> Environment:
        """Create an isolated memory space for a new project; pass its name as `environment`
        to other tools to use it."""
        return b.engram.environments.create(name, b.current_actor(), description)
