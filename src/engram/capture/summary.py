"""A session becomes an episode without an LLM: what was asked, what was done (files changed,
commands run and which failed), decisions, open questions and next steps, read from the
captured events with patterns.

Only the user's own words count as asked (harness scaffolding is stripped at capture); the
agent's last message gives the outcome, its questions and its next steps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import Protocol

from engram.capture.bounds import cut
from engram.capture.events import EventKind


class Observed(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def at(self) -> datetime: ...
    @property
    def text(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def command(self) -> str: ...
    @property
    def files(self) -> tuple[str, ...]: ...
    @property
    def output(self) -> str: ...
    @property
    def failed(self) -> bool: ...


MAX_ITEMS = 8
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(
    r"\b(?:decided|decision|we(?:'ll| will) (?:use|go with|keep|switch)|let'?s (?:use|go with|"
    r"keep|switch)|going with|chose|instead of|switch(?:ed)? to|settled on|agreed)\b",
    re.I,
)
_STATED_DECISION = re.compile(
    r"\b(?:we|I)(?:'ve| have)? (?:decided|agreed|chose|settled on|opted)\b|"
    r"\blet'?s (?:go with|stick with|switch to|standardi[sz]e on)\b|"
    r"\bwe(?:'ll| will) (?:go with|switch to|stick with|standardi[sz]e on)\b|"
    r"\b(?:our|the) decision is\b|\bfrom now on\b",
    re.I,
)
"""A decision a prompt states for the project, stricter than :data:`_DECISION` (a prompt's
"use a dict instead of a list here" is about this change, not a project decision)."""
_NEXT = re.compile(
    r"\b(?:next(?: step)?s?|todo|to do|follow[- ]up|remaining|still need|should (?:also|now|"
    r"next)|then we|later|not yet|left to)\b",
    re.I,
)
_OPEN = re.compile(r"\?\s*$|\b(?:unclear|not sure|unknown|open question|tbd)\b", re.I)
_PREFERENCE = re.compile(
    r"\b(?:always|never|prefer|we use|i use|don'?t use|do not use|make sure to|remember to)\b",
    re.I,
)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@dataclass(frozen=True)
class SessionSummary:
    title: str = ""
    asked: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    open_questions: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    preferences: list[str] = field(default_factory=list)
    """Rules and preferences the user stated ("always run the type checker first")."""
    stated_decisions: list[str] = field(default_factory=list)
    """The decisions among :attr:`decisions` the user stated in a prompt (not the agent's)."""
    outcome: str = ""
    started: datetime | None = None
    ended: datetime | None = None

    @property
    def empty(self) -> bool:
        return not (self.asked or self.files or self.commands or self.outcome)

    def render(self, agent: str) -> str:
        """The episode's text: short labelled lines, factual."""
        when = ""
        if self.started is not None:
            when = f" on {self.started:%Y-%m-%d %H:%M} UTC"
        lines = [f"Session in {agent}{when}: {self.title or 'no prompt recorded'}"]
        sections = (
            ("Asked", self.asked),
            ("Files changed", self.files),
            ("Commands run", self.commands),
            ("Failed", self.failures),
            ("Decisions", self.decisions),
            ("Open questions", self.open_questions),
            ("Next steps", self.next_steps),
        )
        for label, items in sections:
            if items:
                lines.append(f"{label}: " + "; ".join(items))
        if self.outcome:
            lines.append(f"Outcome: {self.outcome}")
        return "\n".join(lines)


def _first_line(text: str, limit: int = 160) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return cut(line, limit, "…")


def _sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE.split(text):
        part = _BULLET.sub("", part).strip()
        if 3 <= len(part) <= 300:
            out.append(part)
    return out


def _add(items: list[str], value: str) -> None:
    if value and value not in items and len(items) < MAX_ITEMS:
        items.append(value)


def _short_path(name: str, cwd: str) -> str:
    path = PurePath(name)
    if cwd and path.is_absolute():
        try:
            return path.relative_to(cwd).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def summarize(events: Sequence[Observed], cwd: str = "") -> SessionSummary:
    """The summary of a session's events, in the order they happened."""
    asked: list[str] = []
    files: list[str] = []
    commands: list[str] = []
    failures: list[str] = []
    decisions: list[str] = []
    questions: list[str] = []
    steps: list[str] = []
    preferences: list[str] = []
    stated: list[str] = []
    last_message = ""
    failed_commands: dict[str, str] = {}
    for ev in events:
        if ev.kind == EventKind.PROMPT and ev.text:
            _add(asked, _first_line(ev.text))
            for s in _sentences(ev.text):
                # a decision stated for the project is one, whatever rule it sets ("from now
                # on we deploy with the Makefile, never by hand")
                project_wide = _STATED_DECISION.search(s) is not None
                if _PREFERENCE.search(s) and not project_wide:
                    _add(preferences, s)
                if project_wide or _DECISION.search(s):
                    _add(decisions, s)
                if project_wide:
                    _add(stated, s)
        elif ev.kind == EventKind.TOOL_RESULT:
            for name in ev.files:
                _add(files, _short_path(name, cwd))
            if ev.command:
                cmd = _first_line(ev.command, 120)
                if ev.failed:
                    failed_commands[cmd] = _first_line(ev.output, 160)
                else:
                    failed_commands.pop(cmd, None)
                _add(commands, f"`{cmd}`" + (" (failed)" if ev.failed else ""))
            elif ev.failed:
                _add(failures, f"{ev.tool or 'a tool'}: {_first_line(ev.output, 160)}")
        elif ev.kind in (EventKind.STOP, EventKind.COMPACTION) and ev.text:
            last_message = ev.text
    for cmd, why in failed_commands.items():
        _add(failures, f"`{cmd}`" + (f": {why}" if why else ""))
    outcome = ""
    if last_message:
        parts = _sentences(last_message)
        outcome = " ".join(parts[:2])[:400]
        for s in parts:
            if _OPEN.search(s):
                _add(questions, s)
            elif _NEXT.search(s):
                _add(steps, s)
            elif _DECISION.search(s):
                _add(decisions, s)
    for cmd in failed_commands:
        _add(steps, f"fix the failing `{cmd}`")
    return SessionSummary(
        title=asked[0] if asked else "",
        asked=asked,
        files=files,
        commands=commands,
        failures=failures,
        decisions=decisions,
        open_questions=questions,
        next_steps=steps,
        preferences=preferences,
        stated_decisions=stated,
        outcome=outcome,
        started=events[0].at if events else None,
        ended=events[-1].at if events else None,
    )
