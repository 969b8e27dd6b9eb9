"""The Engram MCP server: the service layer's memory as tools, resources and prompts.

One :class:`~mcp.server.MCPServer` per transport binding; the SDK serves both protocol eras
(2026-07-28 and the legacy ``initialize`` handshake) on stdio, Streamable HTTP and in-memory.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.auth.provider import TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

import engram
from engram.errors import EngramError, InvalidInput
from engram.mcp import prompts, resources
from engram.mcp.binding import Binding
from engram.mcp.tools import register_all
from engram.mcp.tools._common import message_for
from engram.service.environments import validation_message

INSTRUCTIONS = """\
Engram is the user's persistent memory across sessions and tools. Use it so the user never has \
to repeat themselves.

- Start of a session or a new task: call get_context (with the task as query) and follow the \
Soul it contains.
- Before answering anything that depends on the user's preferences, earlier decisions, the \
project's history or how something is done here: call recall (search_episodes for what \
happened before, search_procedures for how-to).
- When the user states a lasting preference, a fact about themselves or the project, or a \
decision is made: call remember with one self-contained fact per call. Do not store secrets, \
one-off chatter or what is already in the code.
- When the user corrects a memory or it proves wrong or outdated: call feedback, then remember \
the correct fact (it supersedes the old one) or update_memory.
- At the end of a substantial session: create_episode with the summary, key decisions and \
open questions. After a workflow succeeds: create_procedure; after following one: \
record_procedure_outcome.
- Stopping mid-task: handoff_begin (where it stands, next steps) for the next session, in any \
agent. A session-start note that offers a handoff id: handoff_accept reads it.
- Lasting changes to how you should behave go to the Soul (soul_update_block).
- Nothing is lost: deletes are soft and every change has a history (memory_history, \
restore_memory). Environments isolate projects; omit `environment` to use the session's.
- Tool errors name what is wrong; fix the argument or ask the user.
"""


class _Server(MCPServer[Any]):
    """Arguments refused by a tool's input schema (the request models' bounds and validators,
    checked before the tool runs) read like every other error: ``invalid_input: <field>: <what
    is wrong>``, as a refusal inside the tool does."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ToolError) and isinstance(
                cause.__cause__, EngramError | ValidationError
            ):
                # a refusal inside the tool, which the SDK words 'Error executing tool <name>:
                # ...': as the tool said it (``domain_errors``), as an argument refusal reads
                raise ToolError(str(cause)) from cause
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(message_for(InvalidInput(validation_message(cause)))) from cause


def build_server(
    binding: Binding,
    *,
    token_verifier: TokenVerifier | None = None,
    auth: AuthSettings | None = None,
    log_level: str = "WARNING",
) -> MCPServer[Any]:
    """An MCP server over ``binding.engram``; with ``token_verifier`` and ``auth`` (HTTP), every
    request must carry an Engram API key and acts as its owner."""
    server: MCPServer[Any] = _Server(
        "engram",
        title="Engram",
        description="Persistent memory: facts, episodes, procedures and a Soul.",
        instructions=INSTRUCTIONS,
        version=engram.__version__,
        token_verifier=token_verifier,
        auth=auth,
        log_level=log_level.upper(),  # type: ignore[arg-type]
    )
    register_all(server, binding)
    resources.register(server, binding)
    prompts.register(server, binding)
    return server
