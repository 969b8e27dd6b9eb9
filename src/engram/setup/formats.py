"""Merging one entry into another program's configuration, keeping everything else.

JSON files are parsed, changed at one key path and written back with two-space indentation
(the formatting every agent here writes itself); when the change is a no-op the original text is
kept byte for byte. TOML (Codex) is edited as text: Engram's tables are one block, replaced or
removed whole, so comments and the user's own tables stay as they were.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput


class ConfigError(InvalidInput):
    """A configuration file cannot be read or changed; the message names it and what to do."""


JsonChange = Callable[[dict[str, Any]], dict[str, Any]]


def parse_json(path: Path, text: str | None) -> dict[str, Any]:
    """``text`` (the content of ``path``; None or empty: absent) as a JSON object."""
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); fix or move it first") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold a JSON object; fix or move it first")
    return data


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def edit_json(path: Path, text: str | None, change: JsonChange) -> str | None:
    """The text of ``path`` after ``change``; the same text when nothing changes, None when the
    result is an empty object that did not exist before (the file would hold nothing)."""
    before = parse_json(path, text)
    after = change(json.loads(json.dumps(before)))
    if after == before:
        return text
    if not after:
        return None
    return dump_json(after)


def put_entry(keys: tuple[str, ...], name: str, entry: dict[str, Any]) -> JsonChange:
    """Set ``data[keys...][name] = entry`` (intermediate objects created as needed)."""

    def change(data: dict[str, Any]) -> dict[str, Any]:
        node = data
        for key in keys:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        node[name] = entry
        return data

    return change


def drop_entry(keys: tuple[str, ...], name: str, ours: Callable[[Any], bool]) -> JsonChange:
    """Remove ``data[keys...][name]`` when ``ours(entry)``; containers left empty go too."""

    def change(data: dict[str, Any]) -> dict[str, Any]:
        parents: list[dict[str, Any]] = [data]
        for key in keys:
            child = parents[-1].get(key)
            if not isinstance(child, dict):
                return data
            parents.append(child)
        if name not in parents[-1] or not ours(parents[-1][name]):
            return data
        del parents[-1][name]
        for key, parent in zip(reversed(keys), reversed(parents[:-1]), strict=True):
            if parent[key]:
                break
            del parent[key]
        return data

    return change


def get_entry(data: dict[str, Any], keys: tuple[str, ...], name: str) -> Any:
    node: Any = data
    for key in (*keys, name):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


# --------------------------------------------------------------------------------------------
# TOML, as text
# --------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _table_name(line: str) -> str | None:
    match = _HEADER.match(line)
    return match.group(1).replace('"', "").replace(" ", "") if match else None


def parse_toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix or move it first") from exc


def _without_table(text: str, table: str) -> tuple[str, bool]:
    """``text`` without the table ``table`` and its sub-tables (and the blank line before, which
    ``put_toml_table`` adds); the blank lines after it, before a table that follows, are kept."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    inside = found = False
    blanks: list[str] = []  # the blank lines at the end of the table being removed
    for line in lines:
        name = _table_name(line)
        if name is not None:
            was_inside, inside = inside, name == table or name.startswith(table + ".")
            if inside:
                found = True
                if out and not out[-1].strip():
                    out.pop()
            elif was_inside:
                out += blanks  # they separate the tables before and after
            blanks = []
        if not inside:
            out.append(line)
        elif line.strip():
            blanks = []
        else:
            blanks.append(line)
    return "".join(out), found


def put_toml_table(path: Path, text: str | None, table: str, block: str) -> str:
    """``text`` with the table ``table`` (and its sub-tables) replaced by ``block`` at the end."""
    current = text or ""
    data = parse_toml(path, current)
    rest, found = _without_table(current, table)
    if not found and _dotted(data, table) is not None:
        raise ConfigError(
            f"{path} defines {table} inline; remove it (or make it a [{table}] table) first"
        )
    if text is not None and found and _tail_block(current, table) == block:
        return current
    if rest and not rest.endswith("\n"):
        rest += "\n"
    result = f"{rest}\n{block}" if rest else block
    parse_toml(path, result)
    return result


def drop_toml_table(path: Path, text: str | None, table: str) -> str | None:
    """``text`` without the table ``table``; None when nothing else is left."""
    if text is None:
        return None
    parse_toml(path, text)
    rest, found = _without_table(text, table)
    if not found:
        return text
    return rest if rest.strip() else None


def _tail_block(text: str, table: str) -> str | None:
    """The table's text when it is the last thing in the file (as ``put_toml_table`` leaves it)."""
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if _table_name(line) == table:
            tail = lines[i:]
            names = [n for n in map(_table_name, tail) if n is not None]
            if all(n == table or n.startswith(table + ".") for n in names):
                return "".join(tail)
            return None
    return None


def _dotted(data: dict[str, Any], table: str) -> Any:
    node: Any = data
    for key in table.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node
