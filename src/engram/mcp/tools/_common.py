"""What every tool module shares: annotation presets, the environment parameter, and the one
place where domain errors become ``isError`` results the model can act on."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from engram.errors import Conflict, EngramError, InvalidInput, NotFound, PermissionDenied
from engram.requests.fields import EnvironmentRef
from engram.service.environments import validation_message

F = TypeVar("F", bound=Callable[..., Any])

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
"""Reads only (searches may count an access, which changes no memory)."""
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
"""Adds something new; calling it twice adds twice."""
UPDATE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""Sets a state; repeating the call changes nothing more (the old state stays in the history)."""
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
"""Removes something from view (soft: restorable)."""

Environment = Annotated[
    EnvironmentRef | None,
    Field(
        description="Environment (project) name or id ('owner/name' to write to one shared "
        "with you); omit for this session's environment."
    ),
]
MemoryId = Annotated[str, Field(description="A memory id, e.g. 'mem_…', from recall/list_recent.")]

_HINTS: dict[type[EngramError], str] = {
    NotFound: "Check the id or name (recall, list_recent or list_environments show what exists).",
    InvalidInput: "Fix the argument named above and call again.",
    PermissionDenied: "This key or role may not do this; ask the user rather than retrying.",
    Conflict: "The current state does not allow this; read it first, then decide.",
}


_WHERE: dict[str, str] = {
    "memory_id": "recall or list_recent show the memories",
    "handoff": "handoff_list shows the handoffs you can see",
    "entry": "profile_list shows your habits",
    "session": "list_sessions shows the captured sessions",
    "name": "soul_get shows the Soul's blocks",
    "snapshot_id": "soul_get shows the Soul's blocks; soul_snapshot saves one",
    "provider": "list_llm_providers shows the providers configured",
    "environment": "list_environments shows what exists",
}
"""What shows the things of a kind that exist, by the detail a NotFound names the thing by
(memories, the default: recall or list_recent)."""


def message_for(exc: EngramError) -> str:
    hint = next((h for cls, h in _HINTS.items() if isinstance(exc, cls)), "")
    if isinstance(exc, NotFound):
        where = next((w for key, w in _WHERE.items() if key in exc.details), None)
        if where is not None:
            hint = f"Check the id or name ({where})."
    return f"{exc.code}: {exc.message}" + (f". {hint}" if hint else "")


def domain_errors(fn: F) -> F:
    """Raise domain and validation errors as :class:`ToolError` (an ``isError`` result with a
    message naming what is wrong); anything else stays a crash the SDK hides and logs."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EngramError as exc:
            raise ToolError(message_for(exc)) from exc
        except ValidationError as exc:
            raise ToolError(f"invalid_input: {validation_message(exc)}") from exc

    return wrapper  # type: ignore[return-value]


def tool(server: MCPServer[Any], title: str, annotations: ToolAnnotations) -> Callable[[F], F]:
    """Register a sync function as a tool (run on a worker thread by the SDK), its docstring
    the description a model reads."""

    def decorator(fn: F) -> F:
        hints = annotations.model_copy(update={"title": title})
        server.tool(title=title, annotations=hints)(domain_errors(fn))
        _refuse_unknown_arguments(server, fn.__name__)
        return fn

    return decorator


def _refuse_unknown_arguments(server: MCPServer[Any], name: str) -> None:
    """An argument the tool does not take is an error naming it (as REST answers 422), not
    silently dropped: the SDK's argument model ignores extras, so it is swapped for one that
    forbids them, and the published schema says so (``additionalProperties: false``)."""
    registered = server._tool_manager.get_tool(name)  # the SDK offers no public handle
    assert registered is not None
    loose = registered.fn_metadata.arg_model
    config = ConfigDict(**{**loose.model_config, "extra": "forbid"})
    registered.fn_metadata.arg_model = type(loose.__name__, (loose,), {"model_config": config})
    registered.parameters["additionalProperties"] = False
