"""CSV of memories: a header row, columns mapped by name (content, layer, category, importance,
confidence, tags, created_at, environment; other names through a map). A row with a bad value
is skipped with the reason; a file without a content column is an error."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from pydantic import ValidationError

from engram.errors import InvalidInput
from engram.models import NewMemory, Source
from engram.portability.bundle import Bundle, ImportedMemory, Skipped, from_iso, stable_key
from engram.portability.reading import Entry

FORMAT = "csv"
FIELDS = (
    "content",
    "layer",
    "category",
    "importance",
    "confidence",
    "tags",
    "created_at",
    "environment",
)


def looks_like(text: str, mapping: Mapping[str, str] | None = None) -> bool:
    first = text.split("\n", 1)[0]
    if "," not in first and ";" not in first and "\t" not in first:
        return False
    names = {h.strip().lower() for h in next(csv.reader([first], _dialect(first)), [])}
    wanted = {k.lower() for k, v in (mapping or {}).items() if v == "content"} | {"content"}
    return bool(names & wanted)


def _dialect(first_line: str) -> type[csv.Dialect]:
    class Sniffed(csv.excel):
        delimiter = max((",", ";", "\t"), key=first_line.count)

    return Sniffed


def parse_mapping(pairs: list[str]) -> dict[str, str]:
    """``--map column=field`` options as a dict; an unknown field is an error."""
    out = {}
    for pair in pairs:
        column, sep, field = pair.partition("=")
        if not sep or not column.strip() or field.strip() not in FIELDS:
            raise InvalidInput(
                f"--map {pair!r}: expected COLUMN=FIELD with FIELD one of {', '.join(FIELDS)}"
            )
        out[column.strip().lower()] = field.strip()
    return out


def parse(entry: Entry, text: str, mapping: Mapping[str, str] | None = None) -> Bundle:
    out = Bundle(formats=[FORMAT])
    first = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), _dialect(first))
    try:
        header = next(reader)
    except StopIteration:
        raise entry.fail("an empty CSV file (a header row is needed)") from None
    except csv.Error as exc:
        raise entry.fail(f"not readable as CSV: {exc}") from exc
    names = {k.lower(): v for k, v in (mapping or {}).items()}
    columns = [names.get(h.strip().lower(), h.strip().lower()) for h in header]
    if "content" not in columns:
        raise entry.fail(
            f"no 'content' column (columns: {', '.join(header)}); name it with --map COLUMN=content"
        )
    try:
        rows = list(enumerate(reader, start=2))
    except csv.Error as exc:
        raise entry.fail(f"not readable as CSV: {exc}") from exc
    for number, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        values = {c: v.strip() for c, v in zip(columns, row, strict=False) if c in FIELDS}
        where = f"row {number}"
        data: dict[str, object] = {"content": values.get("content", ""), "source": Source.IMPORT}
        for field in ("layer", "category"):
            if values.get(field):
                data[field] = values[field].lower()
        for field in ("importance", "confidence"):
            if values.get(field):
                try:
                    data[field] = float(values[field])
                except ValueError:
                    out.skipped.append(
                        Skipped(
                            entry.file,
                            entry.name,
                            f"{where}: {field} {values[field]!r} is not a number",
                        )
                    )
                    break
        else:
            if values.get("tags"):
                data["tags"] = [t for t in values["tags"].replace(";", ",").split(",") if t.strip()]
            if values.get("created_at"):
                created = from_iso(values["created_at"])
                if created is None:
                    out.skipped.append(
                        Skipped(
                            entry.file,
                            entry.name,
                            f"{where}: created_at {values['created_at']!r} is not an ISO date",
                        )
                    )
                    continue
                data["created_at"] = created
            if data.get("layer") == "procedure":
                data["procedure"] = {"name": str(data["content"])[:200]}
            try:
                memory = NewMemory.model_validate(data)
            except ValidationError as exc:
                first_error = exc.errors()[0]
                column = ".".join(str(p) for p in first_error["loc"]) or "row"
                out.skipped.append(
                    Skipped(entry.file, entry.name, f"{where}: {column}: {first_error['msg']}")
                )
                continue
            env = values.get("environment") or None
            out.memories.append(
                ImportedMemory(
                    key=stable_key(
                        FORMAT, memory.layer, memory.content, values.get("created_at"), env
                    ),
                    memory=memory,
                    environment=env,
                    source=FORMAT,
                )
            )
    return out
