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
    OPENCODE = "opencode"


WHERE: dict[McpClient, str] = {
    McpClient.CLAUDE_CODE: "run in a shell (or add the JSON to .mcp.json / ~/.claude.json)",
    McpClient.CODEX: "~/.codex/config.toml",
    McpClient.GEMINI: ".gemini/settings.json or ~/.gemini/settings.json",
    McpClient.CURSOR: ".cursor/mcp.json or ~/.cursor/mcp.json",
    McpClient.VSCODE: ".vscode/mcp.json",
    McpClient.CLAUDE_DESKTOP: "claude_desktop_config.json (then restart Claude Desktop)",
    McpClient.WINDSURF: "~/.codeium/windsurf/mcp_config.json",
    McpClient.OPENCODE: "~/.config/opencode/opencode.json",
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


CONTAINER: dict[McpClient, str] = {
    McpClient.CLAUDE_CODE: "mcpServers",
    McpClient.GEMINI: "mcpServers",
    McpClient.CURSOR: "mcpServers",
    McpClient.VSCODE: "servers",
    McpClient.CLAUDE_DESKTOP: "mcpServers",
    McpClient.WINDSURF: "mcpServers",
    McpClient.OPENCODE: "mcp",
}
"""The key under which each JSON-configured client lists its servers."""


def client_of(client: McpClient | str) -> McpClient:
    try:
        return McpClient(client)
    except ValueError:
        names = ", ".join(c.value for c in McpClient)
        raise InvalidInput(f"unknown client {client!r}; one of: {names}") from None


def entry(client: McpClient | str, launch: Launch, *, http: bool = False) -> dict[str, Any]:
    """Engram's server entry in a JSON-configured client (``CONTAINER[client]`` → ``engram``)."""
    client = client_of(client)
    bearer = "Bearer ${ENGRAM_TOKEN}"
    if client is McpClient.CODEX:
        raise InvalidInput("Codex is configured in TOML; use snippet()")
    if client is McpClient.CLAUDE_CODE:
        if http:
            headers = {"Authorization": bearer, **launch.headers}
            return {"type": "http", "url": launch.url, "headers": headers}
        return _stdio(launch, type="stdio")
    if client is McpClient.OPENCODE:
        if http:
            headers = {"Authorization": "Bearer {env:ENGRAM_TOKEN}", **launch.headers}
            return {"type": "remote", "url": launch.url, "headers": headers, "enabled": True}
        local: dict[str, Any] = {"type": "local", "command": [launch.command, *launch.args]}
        if launch.env:
            local["environment"] = launch.env
        return {**local, "enabled": True}
    if client is McpClient.VSCODE:
        if http:
            return {
                "type": "http",
                "url": launch.url,
                "headers": {"Authorization": "Bearer ${input:engram-token}", **launch.headers},
            }
        return _stdio(launch, type="stdio")
    if client is McpClient.CLAUDE_DESKTOP:
        if http:
            raise InvalidInput(
                "Claude Desktop cannot reach a local HTTP server; use the stdio entry"
            )
        return _stdio(launch)
    if client is McpClient.GEMINI:
        # ms; also how long `gemini mcp list` waits for the server (5 s otherwise: too short
        # for a cold start on a loaded machine) and the cap on one tool call (600 s otherwise)
        if http:
            headers = {"Authorization": bearer, **launch.headers}
            return {"httpUrl": launch.url, "headers": headers, "timeout": 60000}
        return {**_stdio(launch), "timeout": 60000}
    if not http:
        return _stdio(launch)
    headers = {"Authorization": "Bearer ${env:ENGRAM_TOKEN}", **launch.headers}
    if client is McpClient.CURSOR:
        return {"url": launch.url, "headers": headers}
    return {"serverUrl": launch.url, "headers": headers}  # Windsurf


VSCODE_TOKEN_INPUT = {
    "type": "promptString",
    "id": "engram-token",
    "description": "Engram API key (egm_…)",
    "password": True,
}


def codex_toml(launch: Launch, *, http: bool = False) -> str:
    """Engram's ``[mcp_servers.engram]`` table for Codex's config.toml."""
    if http:
        out = (
            f"[mcp_servers.{NAME}]\nurl = {_toml_str(launch.url)}\n"
            'bearer_token_env_var = "ENGRAM_TOKEN"\n'
        )
        if launch.headers:
            pairs = ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in launch.headers.items())
            out += f"http_headers = {{ {pairs} }}\n"
        return out
    args = ", ".join(_toml_str(a) for a in launch.args)
    out = f"[mcp_servers.{NAME}]\ncommand = {_toml_str(launch.command)}\nargs = [{args}]\n"
    if launch.env:
        out += f"\n[mcp_servers.{NAME}.env]\n"
        out += "".join(f"{k} = {_toml_str(v)}\n" for k, v in launch.env.items())
    return out


def snippet(client: McpClient | str, launch: Launch, *, http: bool = False) -> str:
    """The text to paste (or run) to register Engram in ``client``."""
    client = client_of(client)
    if client is McpClient.CLAUDE_CODE:
        if http:
            extra = "".join(
                f" --header {shlex.quote(f'{k}: {v}')}" for k, v in launch.headers.items()
            )
            return (
                f"claude mcp add --transport http {NAME} {launch.url} "
                f"--header {shlex.quote('Authorization: Bearer ${ENGRAM_TOKEN}')}{extra}"
            )
        env = " ".join(f"-e {shlex.quote(f'{k}={v}')}" for k, v in launch.env.items())
        cmd = shlex.join([launch.command, *launch.args])
        return f"claude mcp add {NAME} {env + ' ' if env else ''}-- {cmd}"
    if client is McpClient.CODEX:
        return codex_toml(launch, http=http)
    config: dict[str, Any] = {CONTAINER[client]: {NAME: entry(client, launch, http=http)}}
    if client is McpClient.VSCODE and http:
        config = {"inputs": [VSCODE_TOKEN_INPUT], **config}
    if client is McpClient.OPENCODE:
        config = {"$schema": "https://opencode.ai/config.json", **config}
    return _json(config)
