"""The exact snippet that registers Engram in each MCP client (``engram mcp-config``).

stdio everywhere (the client launches ``engram mcp``); Streamable HTTP with a bearer token
where the client can send one, read from the ENGRAM_TOKEN environment variable rather than
written into the file.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from engram.errors import InvalidInput

NAME = "engram"


class McpClient(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI = "gemini"
    CURSOR = "cursor"
    VSCODE = "vscode"
    CLAUDE_DESKTOP = "claude-desktop"
    WINDSURF = "windsurf"


WHERE: dict[McpClient, str] = {
    McpClient.CLAUDE_CODE: "run in a shell (or add the JSON to .mcp.json / ~/.claude.json)",
    McpClient.CODEX: "~/.codex/config.toml",
    McpClient.GEMINI: ".gemini/settings.json or ~/.gemini/settings.json",
    McpClient.CURSOR: ".cursor/mcp.json or ~/.cursor/mcp.json",
    McpClient.VSCODE: ".vscode/mcp.json",
    McpClient.CLAUDE_DESKTOP: "claude_desktop_config.json (then restart Claude Desktop)",
    McpClient.WINDSURF: "~/.codeium/windsurf/mcp_config.json",
}


@dataclass(frozen=True)
class Launch:
    """How a client starts the stdio server, or where it reaches the HTTP one."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers (``X-Engram-Project``: the project the client works in)."""


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _stdio(launch: Launch, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {**extra, "command": launch.command, "args": list(launch.args)}
    if launch.env:
        entry["env"] = launch.env
    return entry


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string for these values


def snippet(client: McpClient | str, launch: Launch, *, http: bool = False) -> str:
    """The text to paste (or run) to register Engram in ``client``."""
    try:
        client = McpClient(client)
    except ValueError:
        names = ", ".join(c.value for c in McpClient)
        raise InvalidInput(f"unknown client {client!r}; one of: {names}") from None
    bearer = "Bearer ${ENGRAM_TOKEN}"
    if client is McpClient.CLAUDE_CODE:
        if http:
            extra = "".join(
                f" --header {shlex.quote(f'{k}: {v}')}" for k, v in launch.headers.items()
            )
            return (
                f"claude mcp add --transport http {NAME} {launch.url} "
                f"--header {shlex.quote('Authorization: ' + bearer)}{extra}"
            )
        env = " ".join(f"-e {shlex.quote(f'{k}={v}')}" for k, v in launch.env.items())
        cmd = shlex.join([launch.command, *launch.args])
        return f"claude mcp add {NAME} {env + ' ' if env else ''}-- {cmd}"
    if client is McpClient.CODEX:
        if http:
            out = (
                f"[mcp_servers.{NAME}]\nurl = {_toml_str(launch.url)}\n"
                'bearer_token_env_var = "ENGRAM_TOKEN"\n'
            )
            if launch.headers:
                pairs = ", ".join(
                    f"{_toml_str(k)} = {_toml_str(v)}" for k, v in launch.headers.items()
                )
                out += f"http_headers = {{ {pairs} }}\n"
            return out
        args = ", ".join(_toml_str(a) for a in launch.args)
        out = f"[mcp_servers.{NAME}]\ncommand = {_toml_str(launch.command)}\nargs = [{args}]\n"
        if launch.env:
            out += f"\n[mcp_servers.{NAME}.env]\n"
            out += "".join(f"{k} = {_toml_str(v)}\n" for k, v in launch.env.items())
        return out
    if client is McpClient.VSCODE:
        if http:
            token = {
                "type": "promptString",
                "id": "engram-token",
                "description": "Engram API key (egm_…)",
                "password": True,
            }
            entry = {
                "type": "http",
                "url": launch.url,
                "headers": {"Authorization": "Bearer ${input:engram-token}", **launch.headers},
            }
            return _json({"inputs": [token], "servers": {NAME: entry}})
        return _json({"servers": {NAME: _stdio(launch, type="stdio")}})
    if client is McpClient.CLAUDE_DESKTOP:
        if http:
            raise InvalidInput(
                "Claude Desktop cannot reach a local HTTP server; use the stdio entry"
            )
        return _json({"mcpServers": {NAME: _stdio(launch)}})
    if http:
        env_bearer = "Bearer ${env:ENGRAM_TOKEN}"
        if client is McpClient.GEMINI:
            headers = {"Authorization": bearer, **launch.headers}
            remote: dict[str, Any] = {"httpUrl": launch.url, "headers": headers}
        elif client is McpClient.CURSOR:
            remote = {"url": launch.url, "headers": {"Authorization": env_bearer, **launch.headers}}
        else:  # Windsurf
            remote = {
                "serverUrl": launch.url,
                "headers": {"Authorization": env_bearer, **launch.headers},
            }
        return _json({"mcpServers": {NAME: remote}})
    return _json({"mcpServers": {NAME: _stdio(launch)}})
