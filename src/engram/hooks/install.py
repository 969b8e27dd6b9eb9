"""Writing each agent's hook configuration: merged into the agent's own file, other tools'
hooks kept, a timestamped backup of the file before each change; uninstall removes only
Engram's entries (those whose command runs ``engram-hook``).

| agent | file (user scope) | events |
|---|---|---|
| Claude Code | ``~/.claude/settings.json`` | SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, PreCompact, Stop, SessionEnd |
| Codex | ``$CODEX_HOME/hooks.json`` (``~/.codex``) | SessionStart, UserPromptSubmit, PostToolUse, Stop, SessionEnd |
| Gemini CLI | ``~/.gemini/settings.json`` | SessionStart, BeforeAgent, AfterTool, AfterAgent, SessionEnd |
| Cursor | ``~/.cursor/hooks.json`` | sessionStart, beforeSubmitPrompt, postToolUse, afterShellExecution, afterFileEdit, preCompact, stop, sessionEnd |
| OpenCode | ``~/.config/opencode/plugin/engram.js`` | a plugin: session start, prompts, tools, idle |
"""  # noqa: E501

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.capture.events import Agent
from engram.setup import files, formats

MARK = "engram-hook"
"""In every command Engram's hooks run (the console script or the launcher below)."""
LAUNCHER = Path(__file__).with_name("engram-hook.py")
"""The hook started as ``python -I -S engram-hook.py <agent>``: no site-packages scan."""
CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "Stop",
    "SessionEnd",
)
CODEX_EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd")
GEMINI_EVENTS = ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd")
CURSOR_EVENTS = (
    "sessionStart",
    "beforeSubmitPrompt",
    "postToolUse",
    "afterShellExecution",
    "afterFileEdit",
    "preCompact",
    "stop",
    "sessionEnd",
)
_TOOL_EVENTS = {"PostToolUse", "PostToolUseFailure", "AfterTool"}


InstallError = formats.ConfigError
"""A configuration file cannot be read or changed; the message names it."""


@dataclass(frozen=True)
class Change:
    agent: Agent
    path: Path
    action: str
    """installed, updated, unchanged, removed, absent"""
    backup: Path | None = None


@dataclass(frozen=True)
class Status:
    agent: Agent
    path: Path
    installed: list[str]
    """The agent's events wired to Engram."""
    error: str | None = None
    """Why the file cannot be read (it is not valid JSON, names the line), if it cannot."""


def hook_executable() -> str:
    """What a hook runs, as shell words (the agent's name follows): this Python, isolated and
    without the ``site`` module (``-I -S``: it neither scans site-packages nor runs their
    ``.pth`` files, milliseconds of every hook's start), on :data:`LAUNCHER`. Where that cannot
    work (not POSIX, no launcher file), the ``engram-hook`` script beside this Python (a venv's
    bin), else the one on PATH."""
    if os.name == "posix" and LAUNCHER.is_file() and os.access(sys.executable, os.X_OK):
        return f"{shlex.quote(sys.executable)} -I -S {shlex.quote(str(LAUNCHER))}"
    beside = Path(sys.executable).parent / "engram-hook"
    if beside.exists():
        return shlex.quote(str(beside))
    return shlex.quote(shutil.which("engram-hook") or "engram-hook")


def hook_command(agent: Agent, executable: str, settings: Mapping[str, str]) -> str:
    """The shell command a hook runs (``executable``: shell words, see :func:`hook_executable`);
    agents ignore an ``env`` field on hooks, so the settings (``ENGRAM_URL``, ``ENGRAM_HOME``)
    ride in the command."""
    prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in sorted(settings.items()))
    return f"{prefix}{executable} {agent.value}"


def config_path(agent: Agent, env: Mapping[str, str]) -> Path:
    home = Path(env.get("HOME") or Path.home())
    if agent is Agent.CLAUDE:
        return Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "settings.json"
    if agent is Agent.CODEX:
        return Path(env.get("CODEX_HOME") or home / ".codex") / "hooks.json"
    if agent is Agent.GEMINI:
        return home / ".gemini" / "settings.json"
    if agent is Agent.CURSOR:
        return home / ".cursor" / "hooks.json"
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    return config / "opencode" / "plugin" / "engram.js"


def _read_json(path: Path) -> dict[str, Any]:
    return formats.parse_json(path, files.read(path))


def _ours(handler: Any) -> bool:
    return isinstance(handler, dict) and MARK in str(handler.get("command", ""))


def _strip_groups(groups: Any) -> list[Any]:
    """Claude-shaped matcher groups without Engram's handlers (empty groups dropped)."""
    kept: list[Any] = []
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            kept.append(group)
            continue
        handlers = [h for h in group["hooks"] if not _ours(h)]
        if handlers:
            kept.append({**group, "hooks": handlers})
    return kept


def _claude_like(agent: Agent, data: dict[str, Any], command: str | None) -> dict[str, Any]:
    hooks = dict(data.get("hooks") or {})
    events = {Agent.CLAUDE: CLAUDE_EVENTS, Agent.CODEX: CODEX_EVENTS}.get(agent, GEMINI_EVENTS)
    for name in list(hooks):
        hooks[name] = _strip_groups(hooks[name])
        if not hooks[name]:
            del hooks[name]
    if command is not None:
        for name in events:
            handler: dict[str, Any] = {"type": "command", "command": command}
            if agent is Agent.GEMINI:
                handler = {"name": "engram", **handler, "timeout": 10000}
            else:
                # seconds; Codex clamps SessionEnd hooks to 3 (and says so on every run)
                handler["timeout"] = 3 if agent is Agent.CODEX and name == "SessionEnd" else 10
            group: dict[str, Any] = {"hooks": [handler]}
            if name in _TOOL_EVENTS:
                group = {"matcher": "*", **group}
            hooks[name] = [*hooks.get(name, []), group]
    out = {k: v for k, v in data.items() if k != "hooks"}
    if hooks:
        out["hooks"] = hooks
    return out


def _cursor(data: dict[str, Any], command: str | None) -> dict[str, Any]:
    hooks = dict(data.get("hooks") or {})
    for name in list(hooks):
        entries = hooks[name] if isinstance(hooks[name], list) else []
        hooks[name] = [h for h in entries if not _ours(h)]
        if not hooks[name]:
            del hooks[name]
    if command is not None:
        for name in CURSOR_EVENTS:
            hooks[name] = [*hooks.get(name, []), {"command": command}]
    return {"version": data.get("version", 1), **data, "hooks": hooks}


def opencode_plugin(executable: str, settings: Mapping[str, str]) -> str:
    """The OpenCode plugin: it hands OpenCode's events to ``engram-hook opencode`` and adds the
    session-start block to the system prompt."""
    return _PLUGIN.replace("__HOOK__", json.dumps(shlex.split(executable))).replace(
        "__ENV__", json.dumps(dict(sorted(settings.items())))
    )


_PLUGIN = """// Engram capture for OpenCode: written by `engram hooks install`, removed by
// `engram hooks uninstall` (engram-hook marks it as Engram's).
import { spawnSync } from "node:child_process";

const HOOK = __HOOK__;
const ENV = { ...process.env, ...__ENV__ };

function send(payload) {
  try {
    const r = spawnSync(HOOK[0], [...HOOK.slice(1), "opencode"], {
      input: JSON.stringify(payload), encoding: "utf8", env: ENV, timeout: 5000,
    });
    return JSON.parse(r.stdout || "{}");
  } catch {
    return {};
  }
}

export const EngramPlugin = async ({ directory, worktree }) => {
  const cwd = directory || worktree || process.cwd();
  const context = new Map();
  const lastText = new Map();
  const start = (sid) => {
    if (!sid || context.has(sid)) return context.get(sid) || "";
    const r = send({ hook_event_name: "session.created", session_id: sid, cwd, source: "startup" });
    context.set(sid, typeof r.context === "string" ? r.context : "");
    return context.get(sid);
  };
  return {
    event: async ({ event }) => {
      const sid = event?.properties?.sessionID || event?.properties?.info?.id;
      if (event.type === "session.created") start(sid);
      if (event.type === "session.idle" && sid) {
        send({ hook_event_name: "session.idle", session_id: sid, cwd,
               last_assistant_message: lastText.get(sid) || "" });
      }
      if (event.type === "session.compacted" && sid) {
        send({ hook_event_name: "session.compacted", session_id: sid, cwd });
      }
      if (event.type === "session.deleted" && sid) {
        send({ hook_event_name: "session.deleted", session_id: sid, cwd });
      }
    },
    "chat.message": async (input, output) => {
      start(input.sessionID);
      const text = (output.parts || []).filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text).join("\\n");
      if (text) {
        send({ hook_event_name: "chat.message", session_id: input.sessionID, cwd, prompt: text });
      }
    },
    "tool.execute.after": async (input, output) => {
      send({ hook_event_name: "tool.execute.after", session_id: input.sessionID, cwd,
             tool_name: input.tool, tool_input: input.args,
             tool_response: { output: output.output, metadata: output.metadata } });
    },
    "experimental.text.complete": async (input, output) => {
      if (input.sessionID && output.text) lastText.set(input.sessionID, output.text);
    },
    "experimental.chat.system.transform": async (input, output) => {
      const block = start(input.sessionID);
      if (block) output.system.push(block);
    },
  };
};
"""


def render(agent: Agent, current: dict[str, Any], command: str | None) -> dict[str, Any]:
    """``current`` (an agent's hook file, parsed) with Engram's hooks running ``command``
    (None: without Engram's hooks); other hooks are kept in place."""
    if agent is Agent.CURSOR:
        return _cursor(current, command)
    return _claude_like(agent, current, command)


def install(
    agent: Agent,
    env: Mapping[str, str],
    *,
    executable: str | None = None,
    settings: Mapping[str, str] | None = None,
) -> Change:
    """Wire ``agent`` to Engram; ``settings`` (``ENGRAM_URL``, ``ENGRAM_HOME``) are passed to
    every hook."""
    settings = settings or {}
    path = config_path(agent, env)
    existed = path.exists()
    executable = executable or hook_executable()
    if agent is Agent.OPENCODE:
        text = opencode_plugin(executable, settings)
    else:
        current = _read_json(path)
        text = json.dumps(
            render(agent, current, hook_command(agent, executable, settings)), indent=2
        )
        text += "\n"
    if existed and path.read_text(encoding="utf-8") == text:
        return Change(agent, path, "unchanged")
    backup = files.write(path, text)
    return Change(agent, path, "updated" if existed else "installed", backup)


def uninstall(agent: Agent, env: Mapping[str, str]) -> Change:
    path = config_path(agent, env)
    if not path.exists():
        return Change(agent, path, "absent")
    if agent is Agent.OPENCODE:
        if MARK not in path.read_text(encoding="utf-8"):
            return Change(agent, path, "absent")
        backup = files.write(path, None)
        return Change(agent, path, "removed", backup)
    current = _read_json(path)
    text = json.dumps(render(agent, current, None), indent=2) + "\n"
    if json.loads(text) == current:
        return Change(agent, path, "absent")
    backup = files.write(path, text)
    return Change(agent, path, "removed", backup)


def status(agent: Agent, env: Mapping[str, str]) -> Status:
    path = config_path(agent, env)
    if not path.exists():
        return Status(agent, path, [])
    if agent is Agent.OPENCODE:
        ours = MARK in path.read_text(encoding="utf-8")
        return Status(agent, path, ["plugin"] if ours else [])
    try:
        hooks = _read_json(path).get("hooks") or {}
    except InstallError as exc:
        return Status(agent, path, [], exc.message)
    wired = []
    for name, entries in hooks.items():
        for entry in entries if isinstance(entries, list) else []:
            handlers = entry.get("hooks", [entry]) if isinstance(entry, dict) else []
            if any(_ours(h) for h in handlers):
                wired.append(name)
                break
    return Status(agent, path, wired)
