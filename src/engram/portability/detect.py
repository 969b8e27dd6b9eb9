"""Which export a file is, by its content (never its name), and the :class:`Bundle` it holds.

Each entry is classified on its own — ChatGPT conversations, Claude conversations, projects or
memories, Gemini activity (JSON or HTML), an agent transcript, a CSV of memories, a list of
memories — so a zip, a folder of per-category zips or a single file all work. Claude's projects
are read before its memories, which may name them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.portability import agents, chatgpt, claude, gemini, tabular
from engram.portability.bundle import Bundle, Skipped
from engram.portability.reading import Entry, json_lines_of, json_of, text_of
from engram.portability.writers import MEMORIES_JSON_KEYS

ARCHIVE_FORMAT = "engram-archive"
_TEXTUAL = (".json", ".jsonl", ".csv", ".txt", ".md", ".html", ".htm")
_ACCOUNT_FILES = ("user.json", "users.json")
"""The account's own details in a ChatGPT or Claude export (name, e-mail, phone)."""


@dataclass(frozen=True)
class _Parsed:
    entry: Entry
    kind: str
    value: Any


def is_archive(entries: list[Entry]) -> bool:
    """An Engram archive: a zip whose ``manifest.json`` says so."""
    for entry in entries:
        if entry.basename == "manifest.json" and ARCHIVE_FORMAT.encode() in entry.data[:4096]:
            value = json_of(entry)
            return isinstance(value, dict) and value.get("format") == ARCHIVE_FORMAT
    return False


def _plain_engram_export(entry: Entry) -> bool:
    """``engram export FILE`` without ``--archive``: an object of environments and memories."""
    if not entry.basename.endswith(".json") or b'"environments"' not in entry.data[:4096]:
        return False
    try:
        value = json_of(entry)
    except InvalidInput:
        return False
    return isinstance(value, dict) and set(value) == MEMORIES_JSON_KEYS


def read_bundle(entries: list[Entry], csv_map: Mapping[str, str] | None = None) -> Bundle:
    """Everything the entries hold. Raises :class:`InvalidInput` (naming the file and entry) for
    a malformed file, and when no entry is an export Engram knows."""
    parsed: list[_Parsed] = []
    skipped: list[Skipped] = []
    for entry in entries:
        found = _classify(entry, csv_map)
        if isinstance(found, Skipped):
            skipped.append(found)
        else:
            parsed.append(found)
    if not parsed:
        files = sorted({e.file for e in entries}) or ["(nothing)"]
        looked = ", ".join(e.name for e in entries[:5]) + (" …" if len(entries) > 5 else "")
        hint = ""
        if any(_plain_engram_export(e) for e in entries):
            hint = (
                "; this is Engram's plain JSON export, made for reading: to move memories to "
                "another Engram, export with `engram export FILE --archive` and import that"
            )
        raise InvalidInput(
            f"{', '.join(files)}: not an export Engram can import (ChatGPT, Claude, Gemini "
            f"Takeout, CSV, a memory list, an agent transcript or an Engram archive); "
            f"looked at: {looked or 'no entries'}{hint}",
            file=files[0],
        )
    out = Bundle(skipped=skipped)
    projects: dict[str, str] = {}
    for item in sorted(parsed, key=lambda p: p.kind != "claude-projects"):
        bundle = _parse(item, projects, csv_map)
        if item.kind == "claude-projects":
            projects.update({e.key: e.name for e in bundle.environments})
        out.extend(bundle)
    return out


def _classify(entry: Entry, csv_map: Mapping[str, str] | None) -> _Parsed | Skipped:
    head = entry.data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    textual = entry.basename.lower().endswith(_TEXTUAL) or head[:1] in (b"[", b"{")
    if not textual:
        return Skipped(entry.file, entry.name, "not a conversation or memory file")
    text = text_of(entry)
    stripped = text.lstrip()
    if chatgpt.looks_like_memory_list(text):  # '[2026-01-02] - …' also opens like JSON
        return _Parsed(entry, "memory-list", text)
    if stripped.startswith(("[", "{")):
        value = _json_or_lines(entry, text)
        kind = _json_kind(value)
        if kind is None and entry.basename.lower() in _ACCOUNT_FILES:
            return Skipped(entry.file, entry.name, "the account's details: not memories")
        if kind is None:
            return Skipped(entry.file, entry.name, "JSON of no export Engram knows")
        return _Parsed(entry, kind, value)
    if gemini.looks_like_html(text):
        return _Parsed(entry, "gemini-html", text)
    if stripped.startswith("<"):
        return Skipped(entry.file, entry.name, "HTML of no export Engram knows")
    if tabular.looks_like(text, csv_map) or entry.basename.lower().endswith(".csv"):
        return _Parsed(entry, "csv", text)
    return Skipped(entry.file, entry.name, "text of no export Engram knows")


def _json_or_lines(entry: Entry, text: str) -> Any:
    """One JSON value, or JSON Lines (one object a line) as ``("lines", [values])``."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("{") and lines[0].endswith("}"):
        try:
            json.loads(lines[0])
        except ValueError:
            pass  # a pretty-printed object whose first line happens to close
        except RecursionError as exc:
            raise entry.fail("JSON nested too deeply") from exc
        else:
            return ("lines", json_lines_of(entry))
    return json_of(entry)


def _json_kind(value: Any) -> str | None:
    if isinstance(value, tuple):
        return agents.kind_of_lines(value[1])
    checks = (
        ("chatgpt", chatgpt.looks_like),
        ("claude-conversations", claude.looks_like_conversations),
        ("claude-projects", claude.looks_like_projects),
        ("claude-memories", claude.looks_like_memories),
        ("gemini", gemini.looks_like),
        (agents.GEMINI_CLI, agents.looks_like_gemini_session),
    )
    return next((kind for kind, test in checks if test(value)), None)


def _parse(item: _Parsed, projects: dict[str, str], csv_map: Mapping[str, str] | None) -> Bundle:
    e, v = item.entry, item.value
    lines = v[1] if isinstance(v, tuple) else None
    match item.kind:
        case "chatgpt":
            return chatgpt.parse(e, v)
        case "claude-conversations":
            return claude.parse_conversations(e, v)
        case "claude-projects":
            return claude.parse_projects(e, v)
        case "claude-memories":
            return claude.parse_memories(e, v, projects)
        case "gemini":
            return gemini.parse(e, v)
        case "gemini-html":
            return gemini.parse_html(e, v)
        case "csv":
            return tabular.parse(e, v, csv_map)
        case "memory-list":
            return chatgpt.parse_memory_list(e, v)
        case agents.CLAUDE_CODE:
            return agents.parse_claude_code(e, lines or [])
        case agents.CODEX:
            return agents.parse_codex(e, lines or [])
        case agents.GEMINI_CLI:
            if lines is not None:
                return agents.parse_gemini_cli(e, lines)
            return agents.parse_gemini_cli(e, v["messages"], v.get("sessionId"))
    raise AssertionError(item.kind)
