"""One closed vocabulary of captured events, whatever agent fired them."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum

from engram.capture import vocab as K

TYPE_CHECKING = False  # typing is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any


class EventKind(StrEnum):
    SESSION_START = K.SESSION_START
    PROMPT = K.PROMPT
    TOOL_USE = K.TOOL_USE
    TOOL_RESULT = K.TOOL_RESULT
    COMPACTION = K.COMPACTION
    STOP = K.STOP
    SESSION_END = K.SESSION_END
    OTHER = K.OTHER


class Agent(StrEnum):
    CLAUDE = K.CLAUDE
    CODEX = K.CODEX
    GEMINI = K.GEMINI
    CURSOR = K.CURSOR
    OPENCODE = K.OPENCODE


ENDING_KINDS = frozenset({EventKind.STOP, EventKind.SESSION_END})
"""Events after which a session is summarised."""

MAX_ID = 200
MAX_TEXT_CHARS = 64 * 1024
"""text, command, output and detail (the hook bounds them to far less before sending)."""
MAX_NAME_CHARS = 4096
"""cwd, project, hook, tool, each file path, each key and value of extra."""
MAX_FILES = 200
MAX_EXTRA = 64
_KEY = re.compile(r"^[A-Za-z0-9_.:-]{8,100}$")


@dataclass(frozen=True)
class Event:
    """A captured event, already scrubbed and bounded (see :mod:`engram.capture.privacy`).

    ``key`` is the idempotency key: the server stores an event once per key, however many
    times it is delivered.
    """

    agent: Agent
    kind: EventKind
    session_id: str
    cwd: str
    at: str
    """When it happened: ISO 8601 in UTC."""
    key: str
    hook: str = ""
    """The agent's own event name (``PostToolUse``, ``AfterTool``, …)."""
    project: str | None = None
    """The project of ``cwd`` (its git root's name), the environment the session belongs to
    (created on first use)."""
    environment: str | None = None
    """An environment named explicitly (``ENGRAM_ENV``): the session belongs to it instead of
    ``project``, and it must exist (a name that does not is refused, never created)."""
    text: str = ""
    """The prompt, the assistant's last message or the compaction summary."""
    tool: str = ""
    command: str = ""
    files: tuple[str, ...] = ()
    output: str = ""
    """An excerpt of the tool's input or result."""
    failed: bool = False
    detail: str = ""
    """The start source or end reason."""
    extra: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["agent"] = self.agent.value
        data["kind"] = self.kind.value
        data["files"] = list(self.files)
        return data


WIRE_FIELDS = frozenset(f.name for f in fields(Event))
"""The keys an event may have on the wire: :class:`Event`'s fields."""


def validation_errors(data: Any) -> list[str]:
    """What is wrong with one event as received over the wire (empty when it is valid)."""
    if not isinstance(data, dict):
        return ["an event must be a JSON object"]
    unknown = [k for k in data if k not in WIRE_FIELDS]
    if unknown:  # nothing the server would not store rides along unchecked
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        return [
            f"unknown field {str(unknown[0])[:100]!a}{more}: an event holds only "
            + ", ".join(sorted(WIRE_FIELDS))
        ]
    errors: list[str] = []
    for name in ("agent", "kind", "session_id", "cwd", "at", "key"):
        if not isinstance(data.get(name), str) or not data[name]:
            errors.append(f"'{name}' must be a non-empty string")
    if errors:
        return errors
    if data["agent"] not in Agent.__members__.values():
        errors.append(f"'agent' must be one of {', '.join(a.value for a in Agent)}")
    if data["kind"] not in EventKind.__members__.values():
        errors.append(f"'kind' must be one of {', '.join(k.value for k in EventKind)}")
    if not _KEY.match(data["key"]):
        errors.append("'key' must be 8-100 letters, digits or . _ : -")
    if len(data["session_id"]) > MAX_ID:
        errors.append(f"'session_id' is longer than {MAX_ID} characters")
    files = data.get("files", [])
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        errors.append("'files' must be a list of strings")
    elif len(files) > MAX_FILES:
        errors.append(f"'files' holds more than {MAX_FILES} paths")
    elif any(len(f) > MAX_NAME_CHARS for f in files):
        errors.append(f"a path in 'files' is longer than {MAX_NAME_CHARS} characters")
    for name, limit in _STRINGS:
        value = data.get(name, "")
        if not isinstance(value, str):
            errors.append(f"'{name}' must be a string")
        elif len(value) > limit:
            errors.append(f"'{name}' is longer than {limit} characters")
    for name in ("project", "environment"):
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            errors.append(f"'{name}' must be a string or null")
        elif value is not None and len(value) > MAX_NAME_CHARS:
            errors.append(f"'{name}' is longer than {MAX_NAME_CHARS} characters")
    if not isinstance(data.get("failed", False), bool):
        errors.append("'failed' must be true or false")
    extra = data.get("extra") or {}
    if not isinstance(extra, dict):
        errors.append("'extra' must be an object")
    elif len(extra) > MAX_EXTRA:
        errors.append(f"'extra' holds more than {MAX_EXTRA} entries")
    elif any(
        not isinstance(v, str | int | float | bool)
        or len(str(k)) > MAX_NAME_CHARS
        or len(str(v)) > MAX_NAME_CHARS
        for k, v in extra.items()
    ):
        errors.append(
            f"'extra' values must be strings, numbers or booleans of at most {MAX_NAME_CHARS} "
            "characters"
        )
    return errors


_STRINGS = (
    ("cwd", MAX_NAME_CHARS),
    ("at", 64),
    ("hook", MAX_NAME_CHARS),
    ("tool", MAX_NAME_CHARS),
    ("text", MAX_TEXT_CHARS),
    ("command", MAX_TEXT_CHARS),
    ("output", MAX_TEXT_CHARS),
    ("detail", MAX_TEXT_CHARS),
)


def from_dict(data: dict[str, Any]) -> Event:
    """An event from its wire form; call :func:`validation_errors` first."""
    return Event(
        agent=Agent(data["agent"]),
        kind=EventKind(data["kind"]),
        session_id=data["session_id"],
        cwd=data["cwd"],
        at=data["at"],
        key=data["key"],
        hook=data.get("hook", ""),
        project=data.get("project"),
        environment=data.get("environment"),
        text=data.get("text", ""),
        tool=data.get("tool", ""),
        command=data.get("command", ""),
        files=tuple(data.get("files", ())),
        output=data.get("output", ""),
        failed=bool(data.get("failed", False)),
        detail=data.get("detail", ""),
        extra={str(k): str(v) for k, v in (data.get("extra") or {}).items()},
    )
