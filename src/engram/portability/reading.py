"""Opening what the user hands to ``engram import``: a file, a zip (with zips inside, as
Claude's 2026 export splits them), a folder, or a manifest naming sibling zips; and decoding
JSON safely. Everything is read with limits, and every refusal names the file and the entry.

Zip entries are never extracted to disk: each is read into memory through a capped reader, so
a lying header cannot make it larger than the limit. A name that would escape a folder
(``../``, an absolute path, a drive letter) is refused all the same, as a sign of a hostile
file.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from engram.errors import InvalidInput


@dataclass(frozen=True)
class Limits:
    max_entry_bytes: int = 512 * 1024 * 1024
    max_total_bytes: int = 2 * 1024 * 1024 * 1024
    max_entries: int = 20_000
    max_ratio: int = 200
    """Largest uncompressed/compressed size of a zip entry above 1 MiB (a zip bomb's mark)."""
    max_depth: int = 2
    """Zips inside zips, at most this deep."""


DEFAULT_LIMITS = Limits()

_TEXT_SUFFIXES = (".json", ".jsonl", ".csv", ".txt", ".md", ".html", ".htm", ".zip")


@dataclass(frozen=True)
class Entry:
    """One file of the input: ``file`` is what the user named, ``name`` the entry inside it
    (``a.zip!b.json`` for a zip in a zip; the file's own name for a plain file)."""

    file: str
    name: str
    data: bytes

    @property
    def basename(self) -> str:
        return PurePosixPath(self.name.rsplit("!", 1)[-1]).name

    def fail(self, reason: str) -> InvalidInput:
        # a plain file is its own one entry: named once ('a.json: ...', not 'a.json: a.json: ...')
        alone = self.name == Path(self.file).name
        where = self.file if alone else f"{self.file}: {self.name}"
        return InvalidInput(f"{where}: {reason}", file=self.file, entry=self.name)


class _Budget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.entries = 0

    def take(self, file: str, name: str, size: int) -> None:
        self.entries += 1
        self.total += size
        if self.entries > self.limits.max_entries:
            raise InvalidInput(f"{file}: more than {self.limits.max_entries} entries", file=file)
        if self.total > self.limits.max_total_bytes:
            raise InvalidInput(
                f"{file}: {name}: the input holds more than "
                f"{self.limits.max_total_bytes // 2**20} MiB in all",
                file=file,
                entry=name,
            )


_ZIP_START = b"PK\x03\x04"
"""How a zip file starts (its first entry's local header); its directory is at its end."""


def read_input(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Entry]:
    """Every entry of ``path`` (file, zip or folder), zips opened, in a stable order."""
    if not path.exists():
        raise InvalidInput(f"{path}: no such file or folder", file=str(path))
    budget = _Budget(limits)
    if path.is_dir():
        out: list[Entry] = []
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            rel = child.relative_to(path).as_posix()
            if child.suffix.lower() in _TEXT_SUFFIXES:
                out.extend(_read_file(child, str(path), rel, budget))
        return out
    entries = _read_file(path, str(path), path.name, budget)
    manifest = _manifest_parts(entries)
    for sibling in manifest:  # Claude's 2026 manifest names per-category zips beside it
        target = path.parent / sibling
        if target.is_file():
            entries.extend(_read_file(target, str(target), target.name, budget))
    return entries


def _read_file(path: Path, file: str, name: str, budget: _Budget) -> list[Entry]:
    size = path.stat().st_size
    if size > budget.limits.max_entry_bytes:
        raise InvalidInput(
            f"{file}: {name}: {size // 2**20} MiB is larger than the "
            f"{budget.limits.max_entry_bytes // 2**20} MiB an import file may be",
            file=file,
            entry=name,
        )
    budget.take(file, name, size)
    data = path.read_bytes()
    if zipfile.is_zipfile(io.BytesIO(data)):
        return list(_read_zip(data, file, name, budget, depth=1))
    if data.startswith(_ZIP_START):  # a zip's first entry, but no directory at its end
        raise InvalidInput(
            f"{file}: a zip whose end is missing (truncated: an interrupted download or copy?); "
            "download or copy it again",
            file=file,
        )
    return [Entry(file, name, data)]


def _read_zip(data: bytes, file: str, prefix: str, budget: _Budget, depth: int) -> Iterator[Entry]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidInput(f"{file}: {prefix}: not a readable zip ({exc})", file=file) from exc
    lim = budget.limits
    with archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            label = f"{prefix}!{info.filename}" if depth > 1 else info.filename
            if info.is_dir():
                continue
            _check_name(file, label, info.filename)
            if info.file_size > lim.max_entry_bytes:
                raise InvalidInput(
                    f"{file}: {label}: {info.file_size // 2**20} MiB uncompressed is larger "
                    f"than the {lim.max_entry_bytes // 2**20} MiB an entry may be",
                    file=file,
                    entry=label,
                )
            if info.file_size > 2**20 and info.file_size > lim.max_ratio * max(
                info.compress_size, 1
            ):
                raise InvalidInput(
                    f"{file}: {label}: compressed {info.file_size // max(info.compress_size, 1)}:1"
                    " — refused as a zip bomb",
                    file=file,
                    entry=label,
                )
            body = _read_capped(archive, info, file, label, lim.max_entry_bytes)
            budget.take(file, label, len(body))
            if info.filename.lower().endswith(".zip"):
                if depth >= lim.max_depth:
                    raise InvalidInput(
                        f"{file}: {label}: zips nested deeper than {lim.max_depth}",
                        file=file,
                        entry=label,
                    )
                yield from _read_zip(body, file, label, budget, depth + 1)
            else:
                yield Entry(file, label, body)


def _check_name(file: str, label: str, name: str) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise InvalidInput(
            f"{file}: {label}: an entry name that leaves the archive (path traversal) — "
            "refused as hostile",
            file=file,
            entry=label,
        )


def _read_capped(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str, label: str, cap: int
) -> bytes:
    try:
        with archive.open(info) as stream:
            body = stream.read(cap + 1)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, ValueError) as exc:
        # a truncated or corrupt stream, a bad CRC, an encrypted entry
        raise InvalidInput(f"{file}: {label}: cannot be read ({exc})", file=file) from exc
    if len(body) > cap:
        raise InvalidInput(
            f"{file}: {label}: larger than its header says — refused as a zip bomb",
            file=file,
            entry=label,
        )
    return body


def _manifest_parts(entries: list[Entry]) -> list[str]:
    """The zip names a lone JSON manifest lists (strings ending in .zip, anywhere in it)."""
    if len(entries) != 1 or not entries[0].name.lower().endswith(".json"):
        return []
    if b".zip" not in entries[0].data[:1_000_000]:
        return []
    try:
        value = json.loads(entries[0].data)
    except (ValueError, RecursionError):
        return []
    found: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str) and v.lower().endswith(".zip"):
            found.append(PurePosixPath(v.replace("\\", "/")).name)  # never a path outside
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return sorted(set(found))


# -- decoding ---------------------------------------------------------------------------------
def text_of(entry: Entry) -> str:
    """The entry as UTF-8 (a BOM is dropped); invalid bytes are an error naming the offset."""
    data = entry.data[3:] if entry.data.startswith(b"\xef\xbb\xbf") else entry.data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise entry.fail(f"not valid UTF-8 at byte {exc.start}") from exc


def json_of(entry: Entry) -> Any:
    """The entry parsed as JSON; truncated, malformed or too deeply nested is a clear error."""
    text = text_of(entry)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        ends = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated")
        hint = " (truncated?)" if ends else ""
        raise entry.fail(
            f"not valid JSON{hint}: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except RecursionError as exc:
        raise entry.fail("JSON nested too deeply") from exc


def json_lines_of(entry: Entry) -> list[Any]:
    """Each non-blank line of a JSON Lines entry, parsed."""
    out = []
    for number, line in enumerate(text_of(entry).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise entry.fail(f"line {number} is not valid JSON: {exc.msg}") from exc
        except RecursionError as exc:
            raise entry.fail(f"line {number}: JSON nested too deeply") from exc
    return out
