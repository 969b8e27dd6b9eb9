"""A fake HOME in which every agent `engram setup` knows is already configured with another
tool's MCP server and hooks (files in the agents' own two-space JSON formatting, and a Codex
TOML with comments), to check that setup, a second setup and uninstall keep them."""

from __future__ import annotations

import json
from pathlib import Path

OTHER_HOOK = {"type": "command", "command": "other-tool hook", "timeout": 5}

JSON_FILES: dict[str, dict[str, object]] = {
    ".claude.json": {
        "numStartups": 7,
        "mcpServers": {"other": {"type": "stdio", "command": "other-mcp", "args": ["--x"]}},
        "projects": {"/work/p": {"mcpServers": {}}},
    },
    ".claude/settings.json": {
        "model": "sonnet",
        "hooks": {
            "SessionStart": [{"hooks": [OTHER_HOOK]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [OTHER_HOOK]}],
        },
    },
    ".codex/hooks.json": {"hooks": {"Stop": [{"hooks": [OTHER_HOOK]}]}},
    ".gemini/settings.json": {
        "ui": {"theme": "Dracula"},
        "mcpServers": {"other": {"command": "other-mcp"}},
        "hooks": {"BeforeAgent": [{"hooks": [{"name": "other", **OTHER_HOOK}]}]},
    },
    ".gemini/trustedFolders.json": {"/srv/elsewhere": "TRUST_FOLDER"},
    ".cursor/mcp.json": {"mcpServers": {"other": {"url": "https://other.example/mcp"}}},
    ".cursor/hooks.json": {"version": 1, "hooks": {"stop": [{"command": "other-tool stop"}]}},
    ".config/opencode/opencode.json": {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"other": {"type": "local", "command": ["other-mcp"], "enabled": True}},
        "theme": "tokyonight",
    },
    ".config/Code/User/mcp.json": {"servers": {"other": {"type": "stdio", "command": "o"}}},
    ".config/Claude/claude_desktop_config.json": {"mcpServers": {"other": {"command": "o"}}},
    ".codeium/windsurf/mcp_config.json": {"mcpServers": {"other": {"serverUrl": "https://o"}}},
}

CODEX_TOML = """# my Codex settings
model = "o3"
approval_policy = "on-request"

[mcp_servers.other]
command = "other-mcp"   # keep me
args = ["--x"]

[profiles.fast]
model = "o4-mini"
"""


def make_home(home: Path) -> dict[str, bytes]:
    """Write the files; their bytes by path relative to ``home``."""
    for rel, data in JSON_FILES.items():
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
    (home / ".codex" / "config.toml").write_text(CODEX_TOML)
    return snapshot(home)


def snapshot(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".engram-backup-" not in p.name
    }


def backups(home: Path) -> list[Path]:
    return sorted(p for p in home.rglob("*") if ".engram-backup-" in p.name)
