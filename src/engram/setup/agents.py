"""The agents ``engram setup`` knows: how to tell one is installed (its command on PATH, its
configuration folder) and where its MCP registration lives (user scope)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from engram.capture.events import Agent
from engram.setup.mcp_entries import McpClient


class AgentId(StrEnum):
    CLAUDE = "claude"
    CODEX = "codex"
    GEMINI = "gemini"
    CURSOR = "cursor"
    OPENCODE = "opencode"
    VSCODE = "vscode"
    CLAUDE_DESKTOP = "claude-desktop"
    WINDSURF = "windsurf"


@dataclass(frozen=True)
class AgentInfo:
    id: AgentId
    title: str
    binaries: tuple[str, ...]
    client: McpClient
    hooks: Agent | None
    """The capture adapter of its lifecycle hooks; None: MCP only."""


AGENTS: dict[AgentId, AgentInfo] = {
    a.id: a
    for a in (
        AgentInfo(AgentId.CLAUDE, "Claude Code", ("claude",), McpClient.CLAUDE_CODE, Agent.CLAUDE),
        AgentInfo(AgentId.CODEX, "Codex", ("codex",), McpClient.CODEX, Agent.CODEX),
        AgentInfo(AgentId.GEMINI, "Gemini CLI", ("gemini",), McpClient.GEMINI, Agent.GEMINI),
        AgentInfo(
            AgentId.CURSOR, "Cursor", ("cursor", "cursor-agent"), McpClient.CURSOR, Agent.CURSOR
        ),
        AgentInfo(AgentId.OPENCODE, "OpenCode", ("opencode",), McpClient.OPENCODE, Agent.OPENCODE),
        AgentInfo(AgentId.VSCODE, "VS Code", ("code",), McpClient.VSCODE, None),
        AgentInfo(AgentId.CLAUDE_DESKTOP, "Claude Desktop", (), McpClient.CLAUDE_DESKTOP, None),
        AgentInfo(AgentId.WINDSURF, "Windsurf", ("windsurf",), McpClient.WINDSURF, None),
    )
}


def parse_agent(name: str) -> AgentId:
    from engram.errors import InvalidInput

    try:
        return AgentId(name.strip().lower())
    except ValueError:
        names = ", ".join(a.value for a in AgentId)
        raise InvalidInput(f"unknown agent {name!r}; one of: {names}") from None


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _xdg_config(env: Mapping[str, str]) -> Path:
    return Path(env.get("XDG_CONFIG_HOME") or _home(env) / ".config")


def _app_support(env: Mapping[str, str], platform: str) -> Path:
    """Where desktop apps keep their settings: ~/Library/Application Support on macOS."""
    if platform == "darwin":
        return _home(env) / "Library" / "Application Support"
    if platform == "win32":
        return Path(env.get("APPDATA") or _home(env))
    return _xdg_config(env)


def config_dirs(agent: AgentId, env: Mapping[str, str], platform: str = sys.platform) -> list[Path]:
    """The folders (or files) whose presence means the agent is installed."""
    home = _home(env)
    if agent is AgentId.CLAUDE:
        return [Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude"), home / ".claude.json"]
    if agent is AgentId.CODEX:
        return [Path(env.get("CODEX_HOME") or home / ".codex")]
    if agent is AgentId.GEMINI:
        return [home / ".gemini"]
    if agent is AgentId.CURSOR:
        return [home / ".cursor"]
    if agent is AgentId.OPENCODE:
        return [_xdg_config(env) / "opencode"]
    if agent is AgentId.VSCODE:
        return [_app_support(env, platform) / "Code" / "User"]
    if agent is AgentId.CLAUDE_DESKTOP:
        return [_app_support(env, platform) / "Claude"]
    return [home / ".codeium" / "windsurf"]


def mcp_path(agent: AgentId, env: Mapping[str, str], platform: str = sys.platform) -> Path:
    """The user-scope file that registers MCP servers for ``agent``."""
    home = _home(env)
    if agent is AgentId.CLAUDE:
        base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home
        return base / ".claude.json"
    if agent is AgentId.CODEX:
        return config_dirs(agent, env)[0] / "config.toml"
    if agent is AgentId.GEMINI:
        return home / ".gemini" / "settings.json"
    if agent is AgentId.CURSOR:
        return home / ".cursor" / "mcp.json"
    if agent is AgentId.OPENCODE:
        folder = _xdg_config(env) / "opencode"
        jsonc = folder / "opencode.jsonc"
        return (
            jsonc
            if jsonc.exists() and not (folder / "opencode.json").exists()
            else (folder / "opencode.json")
        )
    if agent is AgentId.VSCODE:
        return config_dirs(agent, env, platform)[0] / "mcp.json"
    if agent is AgentId.CLAUDE_DESKTOP:
        return config_dirs(agent, env, platform)[0] / "claude_desktop_config.json"
    return config_dirs(agent, env)[0] / "mcp_config.json"


def gemini_trusted_folders(env: Mapping[str, str]) -> Path:
    return _home(env) / ".gemini" / "trustedFolders.json"


def detect(env: Mapping[str, str], platform: str = sys.platform) -> dict[AgentId, str]:
    """The agents found, each with the reason (its command on PATH, or its folder)."""
    found: dict[AgentId, str] = {}
    path = env.get("PATH", "")
    for info in AGENTS.values():
        binary = next((b for b in info.binaries if shutil.which(b, path=path)), None)
        if binary:
            found[info.id] = f"{binary} on PATH"
            continue
        folder = next((d for d in config_dirs(info.id, env, platform) if d.exists()), None)
        if folder:
            found[info.id] = f"{folder} exists"
    return found
