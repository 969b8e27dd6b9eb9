"""The Markdown vault's file format: one file per memory, YAML front matter and the text, with
Obsidian wikilinks to related memories; index pages; the vault's state file.

Layout (deterministic: the same memories always give the same bytes, so a git diff of two
exports shows only what changed)::

    DIR/index.md                          every environment, linked
    DIR/<environment>/index.md            its memories by layer, linked
    DIR/<environment>/<layer>s/<id>.md    one memory
    DIR/.engram-vault.json                what the last export or sync wrote (for sync)

A memory file::

    ---
    id: "mem_…"
    layer: "fact"
    category: "preference"
    importance: 0.5
    confidence: 0.9
    tags: ["python"]
    status: "active"
    version: 3
    created: "2026-01-05T10:00:00+00:00"
    updated: "2026-01-06T09:30:00+00:00"
    thread: "cnv_…"
    ---
    Prefers tabs, width 4.

    ## Related
    - [[mem_…|the episode it came from]]

A procedure's file also has ``name``, ``trigger`` and ``steps`` (a list), an episode's
``participants``, ``key_decisions`` and ``open_questions`` (lists) and, when known,
``period_start`` / ``period_end``; sync reads them too, so a hand-written file under
``procedures/`` with a ``name:`` line is a new procedure.

Every front-matter value is JSON (so valid YAML); a hand-written plain value (``tags: [a, b]``,
``category: tools``) is read too. The file name is the id, so it never changes; the wikilink's
alias shows the other memory's opening words. Sync reads the text (everything after the front
matter, up to ``## Related``) and the editable fields (category, importance, confidence, tags).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from engram.errors import InvalidInput
from engram.models import Layer, Memory

STATE_FILE = ".engram-vault.json"
INDEX = "index.md"
RELATED = "## Related"
EDITABLE = ("category", "importance", "confidence", "tags")
_FENCE = "---"
_UNSAFE = re.compile(r"[^\w .-]+", re.UNICODE)


def folder_name(name: str) -> str:
    """An environment's folder: its name with path separators and odd characters replaced."""
    cleaned = _UNSAFE.sub("_", name).strip(" .") or "_"
    return cleaned


def memory_path(env_folder: str, memory: Memory) -> str:
    return f"{env_folder}/{memory.layer.value}s/{memory.id}.md"


def title(memory: Memory, words: int = 8) -> str:
    text = " ".join(memory.content.split()[:words])
    return text.replace("|", "/").replace("]", ")").replace("[", "(")


def render(memory: Memory, related: list[Memory]) -> str:
    fields: list[tuple[str, Any]] = [
        ("id", memory.id),
        ("layer", memory.layer.value),
        ("category", memory.category),
        ("importance", memory.importance),
        ("confidence", memory.confidence),
        ("tags", list(memory.tags)),
        ("status", memory.status.value),
        ("version", memory.version),
        ("created", memory.created_at.isoformat()),
        ("updated", memory.updated_at.isoformat()),
    ]
    if memory.thread:
        fields.append(("thread", memory.thread))
    fields += detail_fields(memory)
    head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields)
    out = f"{_FENCE}\n{head}\n{_FENCE}\n{memory.content.strip()}\n"
    if related:
        links = "\n".join(f"- [[{r.id}|{title(r)}]]" for r in related)
        out += f"\n{RELATED}\n{links}\n"
    return out


PROCEDURE_FIELDS = ("name", "trigger", "steps")
EPISODE_FIELDS = ("participants", "key_decisions", "open_questions", "period_start", "period_end")


def detail_fields(memory: Memory) -> list[tuple[str, Any]]:
    """A procedure's or an episode's details as front-matter fields (none for a fact)."""
    if memory.procedure is not None:
        return [(k, getattr(memory.procedure, k)) for k in PROCEDURE_FIELDS]
    if memory.episode is not None:
        ep = memory.episode.model_dump(mode="json", include=set(EPISODE_FIELDS))
        return [(k, ep[k]) for k in EPISODE_FIELDS if ep[k] is not None]
    return []


def details(layer: Layer, fields: dict[str, Any], memory: Memory | None = None) -> dict[str, Any]:
    """The ``procedure`` or ``episode`` a file's fields give a memory of ``layer`` (over
    ``memory``'s own): empty when the file names none of them."""
    names = PROCEDURE_FIELDS if layer is Layer.PROCEDURE else EPISODE_FIELDS
    given = {k: fields[k] for k in names if k in fields}
    if not given or layer is Layer.FACT:
        return {}
    key = "procedure" if layer is Layer.PROCEDURE else "episode"
    old = getattr(memory, key, None) if memory is not None else None
    base = old.model_dump(mode="json") if old is not None else {}
    merged = {**base, **{k: v for k, v in given.items() if v is not None or k in base}}
    return {} if merged == base else {key: merged}


@dataclass(frozen=True)
class VaultFile:
    """What a memory file says: its front matter and its text."""

    fields: dict[str, Any]
    content: str

    @property
    def id(self) -> str | None:
        value = self.fields.get("id")
        return value if isinstance(value, str) and value else None


def parse(text: str, where: str) -> VaultFile:
    """Read a memory file; a file without front matter is all text (a new memory)."""
    text = text.replace("\r\n", "\n")
    if not text.startswith(_FENCE + "\n"):
        return VaultFile({}, _body(text))
    end = text.find(f"\n{_FENCE}\n", len(_FENCE))
    if end < 0 and text.endswith(f"\n{_FENCE}"):
        end = len(text) - len(_FENCE) - 1
    if end < 0:
        raise InvalidInput(f"{where}: the front matter is not closed by a '---' line", file=where)
    fields: dict[str, Any] = {}
    for n, line in enumerate(text[len(_FENCE) + 1 : end].split("\n"), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, raw = line.partition(":")
        if not sep or not key.strip():
            raise InvalidInput(f"{where}: line {n}: expected 'key: value', got {line!r}")
        fields[key.strip()] = _value(raw.strip())
    return VaultFile(fields, _body(text[end + len(_FENCE) + 2 :]))


def _body(text: str) -> str:
    at = text.find(f"\n{RELATED}\n")
    if text.startswith(f"{RELATED}\n"):
        at = 0
    return (text if at < 0 else text[:at]).strip()


def _value(raw: str) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        pass
    if raw.startswith("[") and raw.endswith("]"):
        return [_value(part.strip()) for part in raw[1:-1].split(",") if part.strip()]
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def index_page(heading: str, sections: list[tuple[str, list[Memory]]]) -> str:
    lines = [f"# {heading}", ""]
    for name, items in sections:
        if not items:
            continue
        lines += [f"## {name}", ""]
        lines += [f"- [[{m.id}|{title(m)}]]" for m in items]
        lines.append("")
    return "\n".join(lines)
