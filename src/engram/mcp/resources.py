"""Read-only views a client can attach to a conversation: ``engram://…`` URIs and templates."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from pydantic import BaseModel

from engram.errors import EngramError, NotFound
from engram.mcp.binding import Binding
from engram.models import Layer, MemoryFilter

T = TypeVar("T")
JSON = "application/json"
RECENT = 20


def _dump(value: BaseModel | list[Any]) -> str:
    items = value if isinstance(value, list) else [value]
    plain = [i.model_dump(mode="json") if isinstance(i, BaseModel) else i for i in items]
    return json.dumps(plain if isinstance(value, list) else plain[0], ensure_ascii=False)


def _read(fn: Callable[[], T]) -> T:
    """Domain errors as resource errors: not found is -32602, the rest a readable -32603."""
    try:
        return fn()
    except NotFound as exc:
        raise ResourceNotFoundError(exc.message) from exc
    except EngramError as exc:
        raise ResourceError(f"{exc.code}: {exc.message}") from exc


def register(server: MCPServer[Any], b: Binding) -> None:
    def layer(kind: Layer, **flt: Any) -> str:
        page = b.engram.memories.list_memories(
            b.current_actor(),
            MemoryFilter(layers=[kind], **flt),
            environment=b.environment,
            limit=RECENT if kind is Layer.EPISODE else 100,
        )
        return _dump(page.items)

    @server.resource("engram://soul", name="soul", title="The Soul", mime_type="application/xml")
    def soul() -> str:
        """The Soul of this session's environment, rendered as a model receives it."""
        return _read(lambda: b.engram.soul.render(b.current_actor(), b.environment).text)

    @server.resource(
        "engram://memories/{category}", name="memories", title="Facts by category", mime_type=JSON
    )
    def memories(category: str) -> str:
        """Active facts of one category (preference, fact, decision, project, general...)."""
        return _read(lambda: layer(Layer.FACT, categories=[category]))

    @server.resource(
        "engram://environments", name="environments", title="Environments", mime_type=JSON
    )
    def environments() -> str:
        """The environments (projects) you can use."""
        return _read(lambda: _dump(b.engram.environments.list(b.current_actor())))

    @server.resource(
        "engram://episodes/recent", name="recent-episodes", title="Recent episodes", mime_type=JSON
    )
    def recent_episodes() -> str:
        """The latest session summaries of this environment, newest first."""
        return _read(lambda: layer(Layer.EPISODE))

    @server.resource("engram://procedures", name="procedures", title="Procedures", mime_type=JSON)
    def procedures() -> str:
        """The known workflows of this environment, with their success counts."""
        return _read(lambda: layer(Layer.PROCEDURE))
