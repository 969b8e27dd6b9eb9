"""The closed vocabulary of captured events as plain strings: the agents and the event kinds.
:class:`engram.capture.events.Agent` and :class:`~engram.capture.events.EventKind` are these
values as enums; the hook client uses the strings (``enum`` costs it milliseconds at start)."""

CLAUDE = "claude"
CODEX = "codex"
GEMINI = "gemini"
CURSOR = "cursor"
OPENCODE = "opencode"
AGENTS = (CLAUDE, CODEX, GEMINI, CURSOR, OPENCODE)

SESSION_START = "session_start"
PROMPT = "prompt"
TOOL_USE = "tool_use"
TOOL_RESULT = "tool_result"
COMPACTION = "compaction"
STOP = "stop"
SESSION_END = "session_end"
OTHER = "other"
KINDS = (SESSION_START, PROMPT, TOOL_USE, TOOL_RESULT, COMPACTION, STOP, SESSION_END, OTHER)
