"""One adapter per agent: its hook payload (stdin JSON) in, an :class:`Event` out, and the
agent's own output format (stdout) back.

Claude Code, Codex and Gemini CLI share Claude's payload shape under different event names;
Cursor has its own camelCase events and fields; OpenCode has no shell hooks, so Engram's
plugin (``engram.hooks.opencode_plugin``) sends payloads of the same shape as Claude's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engram.capture.bounds import EXCERPT_BYTES, PROMPT_BYTES
from engram.capture.events import Agent, Event, EventKind
from engram.capture.privacy import clean, strip_scaffolding

TYPE_CHECKING = False  # typing is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any

_CLAUDE = {
    "SessionStart": EventKind.SESSION_START,
    "UserPromptSubmit": EventKind.PROMPT,
    "PreToolUse": EventKind.TOOL_USE,
    "PostToolUse": EventKind.TOOL_RESULT,
    "PostToolUseFailure": EventKind.TOOL_RESULT,
    "PreCompact": EventKind.COMPACTION,
    "PostCompact": EventKind.COMPACTION,
    "Stop": EventKind.STOP,
    "SessionEnd": EventKind.SESSION_END,
}
_GEMINI = {
    "SessionStart": EventKind.SESSION_START,
    "BeforeAgent": EventKind.PROMPT,
    "BeforeTool": EventKind.TOOL_USE,
    "AfterTool": EventKind.TOOL_RESULT,
    "PreCompress": EventKind.COMPACTION,
    "AfterAgent": EventKind.STOP,
    "SessionEnd": EventKind.SESSION_END,
}
_CURSOR = {
    "sessionStart": EventKind.SESSION_START,
    "beforeSubmitPrompt": EventKind.PROMPT,
    "preToolUse": EventKind.TOOL_USE,
    "beforeShellExecution": EventKind.TOOL_USE,
    "postToolUse": EventKind.TOOL_RESULT,
    "postToolUseFailure": EventKind.TOOL_RESULT,
    "afterShellExecution": EventKind.TOOL_RESULT,
    "afterMCPExecution": EventKind.TOOL_RESULT,
    "afterFileEdit": EventKind.TOOL_RESULT,
    "preCompact": EventKind.COMPACTION,
    "afterAgentResponse": EventKind.STOP,
    "stop": EventKind.STOP,
    "sessionEnd": EventKind.SESSION_END,
}
_OPENCODE = {
    "session.created": EventKind.SESSION_START,
    "chat.message": EventKind.PROMPT,
    "tool.execute.before": EventKind.TOOL_USE,
    "tool.execute.after": EventKind.TOOL_RESULT,
    "session.compacted": EventKind.COMPACTION,
    "session.idle": EventKind.STOP,
    "session.deleted": EventKind.SESSION_END,
}
EVENT_NAMES: dict[Agent, dict[str, EventKind]] = {
    Agent.CLAUDE: _CLAUDE,
    Agent.CODEX: _CLAUDE,
    Agent.GEMINI: _GEMINI,
    Agent.CURSOR: _CURSOR,
    Agent.OPENCODE: _OPENCODE,
}

# tool input keys naming a file the tool writes (Claude, Gemini, OpenCode, Cursor)
_FILE_KEYS = ("file_path", "filePath", "path", "notebook_path", "absolute_path")
_WRITE_TOOLS = re.compile(
    r"^(?:Write|Edit|MultiEdit|NotebookEdit|write_file|replace|edit|write|patch|apply_patch|"
    r"str_replace_based_edit_tool|edit_file|afterFileEdit)$",
    re.IGNORECASE,
)
_COMMAND_KEYS = ("command", "cmd")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
_EXIT_TEXT = re.compile(r"(?:exit(?:ed with)? code|Exit code:?|exit status)\s*(-?\d+)", re.I)


_STOP_HOOKS = {"Stop", "AfterAgent", "session.idle", "stop", "afterAgentResponse"}
_COMPACT_HOOKS = {"PreCompact", "PostCompact", "PreCompress", "session.compacted", "preCompact"}
# the fields of a tool result that hold what it printed, in the order they are kept
_OUTPUT_FIELDS = ("stdout", "stderr", "output", "llmContent", "content", "error", "result")


@dataclass(frozen=True)
class Raw:
    """What an adapter read from one payload, before privacy filters."""

    hook: str
    session_id: str
    cwd: str
    text: str = ""
    tool: str = ""
    tool_input: Any = None
    tool_output: Any = None
    failed: bool = False
    detail: str = ""


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _output_text(output: Any) -> str:
    """What a tool printed: its output fields when it has them, else its JSON."""
    if isinstance(output, dict):
        parts = [_text(output[k]) for k in _OUTPUT_FIELDS if output.get(k)]
        metadata = output.get("metadata")
        if not parts and isinstance(metadata, dict):
            return _output_text(metadata)
        if parts:
            return "\n".join(parts)
    return _text(output)


def _command(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in _COMMAND_KEYS:
            value = tool_input.get(key)
            if isinstance(value, list):
                return " ".join(str(v) for v in value)
            if isinstance(value, str):
                return value
    return ""


def _files(tool: str, tool_input: Any) -> tuple[str, ...]:
    found: list[str] = []
    if isinstance(tool_input, dict):
        if _WRITE_TOOLS.match(tool):
            for key in _FILE_KEYS:
                value = tool_input.get(key)
                if isinstance(value, str) and value:
                    found.append(value)
                    break
        for key in ("input", "patch"):
            value = tool_input.get(key)
            if isinstance(value, str):
                found.extend(m.strip() for m in _PATCH_FILE.findall(value))
        command = _command(tool_input)
        if command:
            found.extend(m.strip() for m in _PATCH_FILE.findall(command))
    return tuple(dict.fromkeys(found))


def _failed(output: Any) -> bool:
    """Whether a tool's result says it failed (an exit code, an error field or flag)."""
    if isinstance(output, dict):
        for key in ("exit_code", "exitCode", "exit", "returncode", "exit_status"):
            code = output.get(key)
            if isinstance(code, int) and not isinstance(code, bool):
                return code != 0
        if output.get("is_error") is True or output.get("success") is False:
            return True
        error = output.get("error")
        if error:
            return True
        metadata = output.get("metadata")
        if isinstance(metadata, dict):
            return _failed(metadata)
        return False
    if isinstance(output, str):
        match = _EXIT_TEXT.search(output[:4096])
        return bool(match and match.group(1) != "0")
    return False


def _claude_like(payload: Mapping[str, Any]) -> Raw:
    hook = str(payload.get("hook_event_name") or "")
    output = payload.get("tool_response")
    failed = hook in ("PostToolUseFailure", "postToolUseFailure")
    if failed and output is None:
        output = payload.get("error")
    kind_text = (
        ("last_assistant_message", "prompt_response", "text")
        if hook in _STOP_HOOKS
        else ("compact_summary", "custom_instructions", "summary")
        if hook in _COMPACT_HOOKS
        else ("prompt",)
    )
    text = next((payload[k] for k in kind_text if payload.get(k)), "")
    return Raw(
        hook=hook,
        session_id=str(payload.get("session_id") or ""),
        cwd=str(payload.get("cwd") or ""),
        text=_text(text),
        tool=str(payload.get("tool_name") or ""),
        tool_input=payload.get("tool_input"),
        tool_output=output,
        failed=failed or _failed(output),
        detail=str(payload.get("source") or payload.get("reason") or payload.get("trigger") or ""),
    )


def _cursor(payload: Mapping[str, Any]) -> Raw:
    hook = str(payload.get("hook_event_name") or "")
    roots = payload.get("workspace_roots") or []
    cwd = str(payload.get("cwd") or (roots[0] if roots else ""))
    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input")
    output = payload.get("tool_output", payload.get("output"))
    if hook in ("beforeShellExecution", "afterShellExecution"):
        tool, tool_input = "Shell", {"command": payload.get("command", "")}
    elif hook == "afterFileEdit":
        tool, tool_input = "afterFileEdit", {"file_path": payload.get("file_path", "")}
        output = payload.get("edits")
    elif hook == "afterMCPExecution":
        tool = str(payload.get("tool_name") or "mcp")
        output = payload.get("result_json", output)
    failed = hook == "postToolUseFailure" or _failed(output)
    if hook == "afterShellExecution" and isinstance(payload.get("exit_code"), int):
        failed = payload["exit_code"] != 0
    return Raw(
        hook=hook,
        session_id=str(payload.get("conversation_id") or payload.get("session_id") or ""),
        cwd=cwd,
        text=_text(payload.get("prompt") or payload.get("text") or ""),
        tool=tool,
        tool_input=tool_input,
        tool_output=output,
        failed=failed,
        detail=str(payload.get("reason") or payload.get("source") or payload.get("status") or ""),
    )


def read_payload(agent: Agent, payload: Mapping[str, Any]) -> Raw:
    return _cursor(payload) if agent is Agent.CURSOR else _claude_like(payload)


def kind_of(agent: Agent, hook: str) -> EventKind:
    return EVENT_NAMES[agent].get(hook, EventKind.OTHER)


def to_event(agent: Agent, raw: Raw, *, at: str, key: str, cwd: str, project: str | None) -> Event:
    """The captured event: every string scrubbed and bounded, prompts without scaffolding."""
    kind = kind_of(agent, raw.hook)
    text = raw.text
    if kind is EventKind.PROMPT:
        text = strip_scaffolding(text)
    command = _command(raw.tool_input)
    files = _files(raw.tool, raw.tool_input)
    excerpt = ""
    if kind is EventKind.TOOL_RESULT:
        excerpt = _output_text(raw.tool_output)
    elif kind is EventKind.TOOL_USE and not command:
        excerpt = _text(raw.tool_input)
    return Event(
        agent=agent,
        kind=kind,
        session_id=raw.session_id[:200] or "unknown",
        cwd=cwd,
        at=at,
        key=key,
        hook=raw.hook[:100],
        project=project,
        text=clean(text, PROMPT_BYTES),
        tool=raw.tool[:200],
        command=clean(command, EXCERPT_BYTES),
        files=tuple(clean(f, 1024) for f in files[:50]),
        output=clean(excerpt, EXCERPT_BYTES),
        failed=raw.failed,
        detail=raw.detail[:200],
    )


# -- output ----------------------------------------------------------------------------------
_CONTEXT_EVENTS = {
    Agent.CLAUDE: {"SessionStart", "UserPromptSubmit"},
    Agent.CODEX: {"SessionStart", "UserPromptSubmit"},
    Agent.GEMINI: {"SessionStart", "BeforeAgent"},
}


def render_output(agent: Agent, hook: str, context: str = "") -> str:
    """What the hook prints: the agent's own (valid, possibly empty) output with ``context``
    injected where the agent reads it.

    Codex validates SessionStart and UserPromptSubmit output against strict schemas (no
    unknown fields, ``hookSpecificOutput`` with ``hookEventName`` always present), so only
    documented fields are ever written.
    """
    if agent is Agent.OPENCODE:
        return json.dumps({"context": context}) if context else "{}"
    if agent is Agent.CURSOR:
        if hook == "sessionStart":
            return json.dumps({"additional_context": context}) if context else "{}"
        if hook == "beforeSubmitPrompt":
            return json.dumps({"continue": True})
        return "{}"
    if hook in _CONTEXT_EVENTS.get(agent, set()):
        specific: dict[str, str] = {"hookEventName": hook}
        if context:
            specific["additionalContext"] = context
        if agent is Agent.CODEX or context:
            return json.dumps({"hookSpecificOutput": specific})
    return "{}"
