"""One adapter per agent: its hook payload (stdin JSON) in, an :class:`Event` out, and the
agent's own output format (stdout) back.

Claude Code, Codex and Gemini CLI share Claude's payload shape under different event names;
Cursor has its own camelCase events and fields; OpenCode has no shell hooks, so Engram's
plugin (``engram.hooks.opencode_plugin``) sends payloads of the same shape as Claude's.
"""

from __future__ import annotations

from engram.capture import vocab as K
from engram.capture.bounds import EXCERPT_BYTES, PROMPT_BYTES
from engram.capture.jsonio import dumps
from engram.capture.privacy import clean, strip_scaffolding
from engram.capture.privacy import scrub as builtin_scrub
from engram.scrub.patterns import fold

TYPE_CHECKING = False  # nothing but plain strings and dicts: the hook client starts faster
if TYPE_CHECKING:
    import re
    from collections.abc import Callable, Mapping
    from typing import Any

    from engram.capture.events import Event

_CLAUDE: dict[str, str] = {
    "SessionStart": K.SESSION_START,
    "UserPromptSubmit": K.PROMPT,
    "PreToolUse": K.TOOL_USE,
    "PostToolUse": K.TOOL_RESULT,
    "PostToolUseFailure": K.TOOL_RESULT,
    "PreCompact": K.COMPACTION,
    "PostCompact": K.COMPACTION,
    "Stop": K.STOP,
    "SessionEnd": K.SESSION_END,
}
_GEMINI: dict[str, str] = {
    "SessionStart": K.SESSION_START,
    "BeforeAgent": K.PROMPT,
    "BeforeTool": K.TOOL_USE,
    "AfterTool": K.TOOL_RESULT,
    "PreCompress": K.COMPACTION,
    "AfterAgent": K.STOP,
    "SessionEnd": K.SESSION_END,
}
_CURSOR: dict[str, str] = {
    "sessionStart": K.SESSION_START,
    "beforeSubmitPrompt": K.PROMPT,
    "preToolUse": K.TOOL_USE,
    "beforeShellExecution": K.TOOL_USE,
    "postToolUse": K.TOOL_RESULT,
    "postToolUseFailure": K.TOOL_RESULT,
    "afterShellExecution": K.TOOL_RESULT,
    "afterMCPExecution": K.TOOL_RESULT,
    "afterFileEdit": K.TOOL_RESULT,
    "preCompact": K.COMPACTION,
    "afterAgentResponse": K.STOP,
    "stop": K.STOP,
    "sessionEnd": K.SESSION_END,
}
_OPENCODE: dict[str, str] = {
    "session.created": K.SESSION_START,
    "chat.message": K.PROMPT,
    "tool.execute.before": K.TOOL_USE,
    "tool.execute.after": K.TOOL_RESULT,
    "session.compacted": K.COMPACTION,
    "session.idle": K.STOP,
    "session.deleted": K.SESSION_END,
}
EVENT_NAMES: dict[str, dict[str, str]] = {
    K.CLAUDE: _CLAUDE,
    K.CODEX: _CLAUDE,
    K.GEMINI: _GEMINI,
    K.CURSOR: _CURSOR,
    K.OPENCODE: _OPENCODE,
}

# tool input keys naming a file the tool writes (Claude, Gemini, OpenCode, Cursor)
_FILE_KEYS = ("file_path", "filePath", "path", "notebook_path", "absolute_path")
_WRITE_TOOLS = frozenset(
    name.lower()
    for name in (
        "Write", "Edit", "MultiEdit", "NotebookEdit", "write_file", "replace", "edit", "write",
        "patch", "apply_patch", "str_replace_based_edit_tool", "edit_file", "afterFileEdit",
    )
)  # fmt: skip
"""Tools whose input names a file they write (matched ignoring case)."""
_COMMAND_KEYS = ("command", "cmd")
_PATCH_MARK = "*** "
_EXIT_WORDS = ("exit code", "exited with code", "exit status")
_regexes: dict[str, re.Pattern[str]] = {}


def _regex(name: str) -> re.Pattern[str]:
    """The patch-header and exit-code regexes, compiled when a text first needs them."""
    regex = _regexes.get(name)
    if regex is None:
        import re

        if name == "patch":
            regex = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)
        else:
            regex = re.compile(r"(?:exit(?:ed with)? code|Exit code:?|exit status)\s*(-?\d+)", re.I)
        _regexes[name] = regex
    return regex


def _patch_files(text: str) -> list[str]:
    if _PATCH_MARK not in text:
        return []
    return [m.strip() for m in _regex("patch").findall(text)]


_STOP_HOOKS = {"Stop", "AfterAgent", "session.idle", "stop", "afterAgentResponse"}
_COMPACT_HOOKS = {"PreCompact", "PostCompact", "PreCompress", "session.compacted", "preCompact"}
# the fields of a tool result that hold what it printed, in the order they are kept
_OUTPUT_FIELDS = ("stdout", "stderr", "output", "llmContent", "content", "error", "result")


class Raw:
    """What an adapter read from one payload, before privacy filters."""

    __slots__ = (
        "cwd", "detail", "failed", "hook", "session_id", "text", "tool", "tool_input",
        "tool_output",
    )  # fmt: skip

    def __init__(
        self,
        hook: str,
        session_id: str,
        cwd: str,
        text: str = "",
        tool: str = "",
        tool_input: Any = None,
        tool_output: Any = None,
        failed: bool = False,
        detail: str = "",
    ) -> None:
        self.hook = hook
        self.session_id = session_id
        self.cwd = cwd
        self.text = text
        self.tool = tool
        self.tool_input = tool_input
        self.tool_output = tool_output
        self.failed = failed
        self.detail = detail


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return dumps(value, sort_keys=True, default=str)


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


def _without_content(command: str) -> str:
    """A command without the content it writes, which capture never keeps: the body of a
    patch (Codex's ``apply_patch`` takes it in its command, or from a heredoc) and a heredoc's
    lines (``cat > f <<EOF``); the files it names are kept apart (:func:`_files`)."""
    at = command.find(_PATCH_MARK + "Begin Patch")
    if at >= 0:
        head = command[:at].strip()
        return head or "apply_patch"
    if "<<" not in command or "\n" not in command:
        return command
    kept: list[str] = []
    lines = iter(command.split("\n"))
    for line in lines:
        kept.append(line)
        end = _heredoc_end(line)
        if end is not None:  # the body, up to the line that ends it, is content
            for body in lines:
                if body.strip() == end:
                    break
    return "\n".join(kept)


def _heredoc_end(line: str) -> str | None:
    """The word that ends the heredoc ``line`` opens (``cat > f <<'EOF'``: EOF), or None; with
    string methods only (the hook loads no regex for a command)."""
    at = line.find("<<")
    if at < 0 or line[at + 2 : at + 3] == "<":  # <<< is a here-string: no body follows
        return None
    word = line[at + 2 :].lstrip("-").lstrip().split(" ", 1)[0].strip("'\"")
    word = "".join(c for c in word if c.isalnum() or c == "_")
    return word or None


def _files(tool: str, tool_input: Any) -> tuple[str, ...]:
    found: list[str] = []
    if isinstance(tool_input, dict):
        if fold(tool) in _WRITE_TOOLS:
            for key in _FILE_KEYS:
                value = tool_input.get(key)
                if isinstance(value, str) and value:
                    found.append(value)
                    break
        for key in ("input", "patch"):
            value = tool_input.get(key)
            if isinstance(value, str):
                found.extend(_patch_files(value))
        command = _command(tool_input)
        if command:
            found.extend(_patch_files(command))
    return tuple(dict.fromkeys(found))


def named_paths(tool_input: Any) -> tuple[str, ...]:
    """Every path a tool's input names, whatever the tool (a read as well as a write): the
    file keys, a list of ``paths``, and the files of a patch; what ``ignore_paths`` is checked
    against (with the command's words, :meth:`~engram.capture.repo.RepoRules.ignores`)."""
    found: list[str] = []
    if isinstance(tool_input, dict):
        for key in (*_FILE_KEYS, "paths", "file_paths", "dir_path", "directory"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                found.append(value)
            elif isinstance(value, list):
                found.extend(v for v in value if isinstance(v, str) and v)
    found.extend(_files("", tool_input))
    return tuple(dict.fromkeys(found))


def command_of(tool_input: Any) -> str:
    """The shell command a tool's input runs (empty when none)."""
    return _command(tool_input)


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
        # Gemini CLI: "…\nExit Code: 2\n…" inside the text it gives the model
        llm = output.get("llmContent")
        return isinstance(llm, str) and _failed(llm)
    if isinstance(output, str):
        head = output[:4096]
        if not any(w in fold(head) for w in _EXIT_WORDS):
            return False
        match = _regex("exit").search(head)
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


def read_payload(agent: str, payload: Mapping[str, Any]) -> Raw:
    return _cursor(payload) if agent == K.CURSOR else _claude_like(payload)


def kind_of(agent: str, hook: str) -> str:
    """The event kind (a value of :class:`~engram.capture.events.EventKind`) of an agent's
    hook event."""
    return EVENT_NAMES[agent].get(hook, K.OTHER)


def to_wire(
    agent: str,
    raw: Raw,
    *,
    at: str,
    key: str,
    cwd: str,
    project: str | None,
    scrub: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The captured event in its wire form (what the hook posts and spools): every string
    scrubbed (by ``scrub``, the site's scrubber; the built-in patterns by default) and bounded,
    prompts without scaffolding."""
    scrub = scrub or builtin_scrub
    kind = kind_of(agent, raw.hook)
    text = raw.text
    if kind == K.PROMPT:
        text = strip_scaffolding(text)
    command = _without_content(_command(raw.tool_input))
    files = _files(raw.tool, raw.tool_input)
    excerpt = ""
    if kind == K.TOOL_RESULT:
        excerpt = _output_text(raw.tool_output)
    elif kind == K.TOOL_USE and not command:
        excerpt = _text(raw.tool_input)
    return {
        "agent": str(agent),
        "kind": kind,
        "session_id": raw.session_id[:200] or "unknown",
        "cwd": cwd,
        "at": at,
        "key": key,
        "hook": raw.hook[:100],
        "project": project,
        "text": clean(text, PROMPT_BYTES, scrub),
        "tool": raw.tool[:200],
        "command": clean(command, EXCERPT_BYTES, scrub),
        "files": [clean(f, 1024, scrub) for f in files[:50]],
        "output": clean(excerpt, EXCERPT_BYTES, scrub),
        "failed": raw.failed,
        "detail": raw.detail[:200],
        "extra": {},
    }


def to_event(agent: str, raw: Raw, *, at: str, key: str, cwd: str, project: str | None) -> Event:
    """:func:`to_wire` as an :class:`~engram.capture.events.Event`."""
    from engram.capture.events import from_dict

    return from_dict(to_wire(agent, raw, at=at, key=key, cwd=cwd, project=project))


# -- output ----------------------------------------------------------------------------------
_CONTEXT_EVENTS = {
    K.CLAUDE: {"SessionStart", "UserPromptSubmit"},
    K.CODEX: {"SessionStart", "UserPromptSubmit"},
    K.GEMINI: {"SessionStart", "BeforeAgent"},
}


def render_output(agent: str, hook: str, context: str = "") -> str:
    """What the hook prints: the agent's own (valid, possibly empty) output with ``context``
    injected where the agent reads it.

    Codex validates SessionStart and UserPromptSubmit output against strict schemas (no
    unknown fields, ``hookSpecificOutput`` with ``hookEventName`` always present), so only
    documented fields are ever written.
    """
    if agent == K.OPENCODE:
        return dumps({"context": context}, ascii=True) if context else "{}"
    if agent == K.CURSOR:
        if hook == "sessionStart":
            return dumps({"additional_context": context}, ascii=True) if context else "{}"
        if hook == "beforeSubmitPrompt":
            return dumps({"continue": True})
        return "{}"
    if hook in _CONTEXT_EVENTS.get(agent, set()):
        specific: dict[str, str] = {"hookEventName": hook}
        if context:
            specific["additionalContext"] = context
        if agent == K.CODEX or context:
            return dumps({"hookSpecificOutput": specific}, ascii=True)
    return "{}"
