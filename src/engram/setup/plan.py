"""What ``engram setup`` changes: for each agent, each file to create, change or remove, what
goes in, and the text before and after — computed first (``--plan`` prints it), applied after.

Every edit is a merge: other tools' servers and hooks stay where they were; running the plan
again changes nothing; the uninstall plan removes only Engram's entries (the server named
``engram`` that runs Engram, the hooks that run ``engram-hook``, the OpenCode plugin, and the
Gemini trusted folders that setup itself added — remembered in ``<home>/setup.json``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.capture.events import Agent
from engram.hooks import install as hooks
from engram.setup import files, formats
from engram.setup.agents import AGENTS, AgentId, gemini_trusted_folders, mcp_path
from engram.setup.mcp_entries import (
    CONTAINER,
    NAME,
    VSCODE_TOKEN_INPUT,
    Launch,
    McpClient,
    codex_toml,
    entry,
)

TRUSTED = "TRUST_FOLDER"
RECORD = "setup.json"


@dataclass(frozen=True)
class Wiring:
    """What setup writes: how clients launch (or reach) Engram and what the hooks run."""

    launch: Launch
    http: bool
    hook_executable: str
    hook_settings: Mapping[str, str]
    trust: tuple[Path, ...] = ()
    """Folders to add to Gemini CLI's trusted folders (it loads no MCP server elsewhere)."""


@dataclass
class FileChange:
    agent: AgentId
    path: Path
    before: str | None
    after: str | None
    what: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        if self.before == self.after:
            return "unchanged"
        if self.after is None:
            return "remove"
        return "create" if self.before is None else "change"


Edit = Callable[[str | None], str | None]


def _ours_mcp(value: Any) -> bool:
    return "engram" in json.dumps(value)


class _Builder:
    def __init__(self, agent: AgentId) -> None:
        self.agent = agent
        self.changes: dict[Path, FileChange] = {}

    def edit(self, path: Path, what: str, edit: Edit) -> None:
        change = self.changes.get(path)
        if change is None:
            text = files.read(path)
            change = self.changes[path] = FileChange(self.agent, path, text, text)
        after = edit(change.after)
        if after != change.after:
            change.what.append(what)
        change.after = after

    def result(self) -> list[FileChange]:
        return list(self.changes.values())


def _describe_mcp(wiring: Wiring) -> str:
    if wiring.http:
        return f"MCP server {NAME!r} at {wiring.launch.url} (key from $ENGRAM_TOKEN)"
    env = " ".join(f"{k}={v}" for k, v in wiring.launch.env.items())
    cmd = shlex.join([wiring.launch.command, *wiring.launch.args])
    return f"MCP server {NAME!r}: {env + ' ' if env else ''}{cmd} (stdio)"


def _mcp_edit(client: McpClient, path: Path, wiring: Wiring | None) -> Edit:
    """Add (``wiring``) or remove (None) Engram's server in ``client``'s file."""
    if client is McpClient.CODEX:
        table = f"mcp_servers.{NAME}"
        if wiring is None:
            return lambda text: formats.drop_toml_table(path, text, table)
        block = codex_toml(wiring.launch, http=wiring.http)
        return lambda text: formats.put_toml_table(path, text, table, block)
    key = (CONTAINER[client],)
    if wiring is None:
        change = formats.drop_entry(key, NAME, _ours_mcp)
        if client is McpClient.VSCODE:
            change = _chain(change, _drop_vscode_input)
        return lambda text: formats.edit_json(path, text, change)
    value = entry(client, wiring.launch, http=wiring.http)
    change = formats.put_entry(key, NAME, value)
    if client is McpClient.VSCODE and wiring.http:
        change = _chain(change, _put_vscode_input)
    return lambda text: formats.edit_json(path, text, change)


def _chain(*changes: formats.JsonChange) -> formats.JsonChange:
    def run(data: dict[str, Any]) -> dict[str, Any]:
        for change in changes:
            data = change(data)
        return data

    return run


def _put_vscode_input(data: dict[str, Any]) -> dict[str, Any]:
    inputs = [i for i in data.get("inputs") or [] if not _is_our_input(i)]
    data["inputs"] = [*inputs, VSCODE_TOKEN_INPUT]
    return data


def _drop_vscode_input(data: dict[str, Any]) -> dict[str, Any]:
    if "inputs" in data:
        data["inputs"] = [i for i in data["inputs"] or [] if not _is_our_input(i)]
        if not data["inputs"]:
            del data["inputs"]
    return data


def _is_our_input(value: Any) -> bool:
    return isinstance(value, dict) and value.get("id") == VSCODE_TOKEN_INPUT["id"]


def _hooks_edit(info_hooks: Agent, path: Path, wiring: Wiring | None) -> Edit:
    if info_hooks is Agent.OPENCODE:
        if wiring is None:
            return lambda text: None if text is not None and hooks.MARK in text else text
        plugin = hooks.opencode_plugin(wiring.hook_executable, wiring.hook_settings)
        return lambda _text: plugin
    command = (
        hooks.hook_command(info_hooks, wiring.hook_executable, wiring.hook_settings)
        if wiring is not None
        else None
    )

    def change(data: dict[str, Any]) -> dict[str, Any]:
        out = hooks.render(info_hooks, data, command)
        if command is None and out.get("hooks") == {}:
            del out["hooks"]
            if out == {"version": 1} and "version" not in data:
                return {}
            if out == {"version": 1} and set(data) == {"version", "hooks"}:
                return {}
        return out

    return lambda text: formats.edit_json(path, text, change)


def _describe_hooks(agent: Agent, wiring: Wiring) -> str:
    url = wiring.hook_settings.get("ENGRAM_URL")
    posting = f", posting to {url}" if url else ""
    if agent is Agent.OPENCODE:
        what = f"capture, session context{posting}"
        return f"plugin running {wiring.hook_executable} opencode ({what})"
    events = {
        Agent.CLAUDE: hooks.CLAUDE_EVENTS,
        Agent.CODEX: hooks.CODEX_EVENTS,
        Agent.GEMINI: hooks.GEMINI_EVENTS,
        Agent.CURSOR: hooks.CURSOR_EVENTS,
    }[agent]
    where = f" ({posting.removeprefix(', ')})" if url else ""
    return f"hooks {', '.join(events)} → {wiring.hook_executable} {agent.value}{where}"


def record_path(engram_home: Path) -> Path:
    return engram_home / RECORD


def read_record(engram_home: Path) -> dict[str, Any]:
    return formats.parse_json(record_path(engram_home), files.read(record_path(engram_home)))


def _trust_edit(path: Path, folders: tuple[Path, ...], recorded: list[str] | None) -> Edit:
    """Add ``folders`` as trusted (install), or remove the ``recorded`` ones setup added."""

    def change(data: dict[str, Any]) -> dict[str, Any]:
        if recorded is not None:
            return {k: v for k, v in data.items() if not (k in recorded and v == TRUSTED)}
        for folder in folders:
            data.setdefault(str(folder), TRUSTED)  # an explicit DO_NOT_TRUST stays
        return data

    return lambda text: formats.edit_json(path, text, change)


def _skips_mcp(agent: AgentId, wiring: Wiring) -> bool:
    return wiring.http and agent is AgentId.CLAUDE_DESKTOP


def note(agent: AgentId, wiring: Wiring) -> str | None:
    """What the user should know about ``agent``'s wiring (why a part is left out)."""
    if _skips_mcp(agent, wiring):
        return "Claude Desktop reaches only local (stdio) servers; its MCP entry is skipped"
    return NOTES.get(agent)


NOTES = {
    AgentId.CODEX: "Codex runs new hooks only once you trust them (its /hooks menu)",
    AgentId.CLAUDE_DESKTOP: "restart Claude Desktop to load the change",
}


def install_plan(
    agent: AgentId, wiring: Wiring, env: Mapping[str, str], platform: str
) -> list[FileChange]:
    info = AGENTS[agent]
    build = _Builder(agent)
    path = mcp_path(agent, env, platform)
    if not _skips_mcp(agent, wiring):
        build.edit(path, _describe_mcp(wiring), _mcp_edit(info.client, path, wiring))
    if info.hooks is not None:
        hook_path = hooks.config_path(info.hooks, env)
        build.edit(
            hook_path,
            _describe_hooks(info.hooks, wiring),
            _hooks_edit(info.hooks, hook_path, wiring),
        )
    if agent is AgentId.GEMINI and wiring.trust:
        trusted = gemini_trusted_folders(env)
        names = ", ".join(str(f) for f in wiring.trust)
        build.edit(
            trusted,
            f"trust {names} (Gemini loads MCP servers only in trusted folders)",
            _trust_edit(trusted, wiring.trust, None),
        )
    return build.result()


def uninstall_plan(
    agent: AgentId, env: Mapping[str, str], platform: str, record: Mapping[str, Any]
) -> list[FileChange]:
    info = AGENTS[agent]
    build = _Builder(agent)
    path = mcp_path(agent, env, platform)
    build.edit(path, f"remove MCP server {NAME!r}", _mcp_edit(info.client, path, None))
    if info.hooks is not None:
        hook_path = hooks.config_path(info.hooks, env)
        what = (
            "remove the Engram plugin"
            if info.hooks is Agent.OPENCODE
            else ("remove Engram's hooks (engram-hook)")
        )
        build.edit(hook_path, what, _hooks_edit(info.hooks, hook_path, None))
    if agent is AgentId.GEMINI:
        trusted = gemini_trusted_folders(env)
        recorded = [str(f) for f in record.get("gemini_trusted", [])]
        build.edit(
            trusted,
            f"untrust {', '.join(recorded)} (added by setup)",
            _trust_edit(trusted, (), recorded),
        )
    return build.result()


def newly_trusted(changes: list[FileChange]) -> list[str]:
    """The trusted folders the plan adds (to remember, so that uninstall removes only them)."""
    out: list[str] = []
    for change in changes:
        if change.path.name != "trustedFolders.json" or change.action == "unchanged":
            continue
        before = formats.parse_json(change.path, change.before)
        after = formats.parse_json(change.path, change.after)
        out += [k for k in after if k not in before]
    return out


def apply(changes: list[FileChange]) -> list[tuple[FileChange, Path | None]]:
    """Write each changed file (a backup first); the backups, in order."""
    done = []
    for change in changes:
        if change.action == "unchanged":
            continue
        if files.read(change.path) != change.before:
            raise formats.ConfigError(
                f"{change.path} changed since the plan was made; run engram setup again"
            )
        done.append((change, files.write(change.path, change.after)))
    return done
