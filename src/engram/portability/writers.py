"""Exported documents: memories (JSON with every version, Markdown, XLSX, DOCX, PDF, grouped
by environment and layer with dates and categories), conversations (Markdown, DOCX, PDF) and
the Soul (JSON, Markdown). Each writer returns bytes; output is deterministic for the same
data. The XLSX, DOCX and PDF writers need the ``export`` extra."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput, MissingDependency
from engram.extraction.conversation import Conversation, Message
from engram.models import Environment, Layer, Memory, MemoryVersion

MEMORY_FORMATS = ("json", "markdown", "xlsx", "docx", "pdf")
CONVERSATION_FORMATS = ("markdown", "docx", "pdf")
SUFFIX = {"json": ".json", "markdown": ".md", "xlsx": ".xlsx", "docx": ".docx", "pdf": ".pdf"}
COLUMNS = (
    "id", "environment", "layer", "content", "category", "tags", "importance", "confidence",
    "source", "status", "pinned", "version", "created_at", "updated_at", "last_accessed_at",
    "access_count", "reinforcement_count", "author", "thread", "supersedes", "superseded_by",
    "merged_into", "episode", "procedure", "metadata",
)  # fmt: skip
_FONTS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf")


@dataclass(frozen=True)
class MemoryExport:
    environments: list[Environment]
    memories: list[Memory]
    versions: dict[str, list[MemoryVersion]] = field(default_factory=dict)

    def grouped(self) -> Iterator[tuple[Environment, Layer, list[Memory]]]:
        for env in sorted(self.environments, key=lambda e: e.name):
            for layer in Layer:
                items = [
                    m for m in self.memories if m.environment_id == env.id and m.layer is layer
                ]
                if items:
                    yield env, layer, sorted(items, key=lambda m: (m.created_at, m.id))


@dataclass(frozen=True)
class ConversationExport:
    environments: dict[str, str]
    """Environment id -> name."""
    conversations: list[tuple[Conversation, list[Message]]]


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n"


def _plain(memory: Memory, env_names: dict[str, str]) -> dict[str, Any]:
    data = memory.model_dump(mode="json")
    row = {c: data.get(c) for c in COLUMNS if c != "environment"}
    row["environment"] = env_names.get(memory.environment_id, memory.environment_id)
    return row


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value


def _day(memory: Memory) -> str:
    return memory.created_at.date().isoformat()


def details(memory: Memory) -> list[str]:
    """What a procedure or an episode holds beyond its content, a line each (none for a
    fact): the document exports print them under the memory, as JSON and XLSX keep them."""
    out: list[str] = []
    if (proc := memory.procedure) is not None:
        out.append(f"procedure: {proc.name}")
        if proc.trigger:
            out.append(f"when: {proc.trigger}")
        out += [f"{i}. {step}" for i, step in enumerate(proc.steps, start=1)]
    if (ep := memory.episode) is not None:
        if ep.period_start or ep.period_end:
            span = " – ".join(
                t.isoformat(timespec="minutes") for t in (ep.period_start, ep.period_end) if t
            )
            out.append(f"period: {span}")
        for label, items in (
            ("participants", ep.participants),
            ("decisions", ep.key_decisions),
            ("open questions", ep.open_questions),
        ):
            if items:
                out.append(f"{label}: {'; '.join(items)}")
    return out


# -- memories ---------------------------------------------------------------------------------
MEMORIES_JSON_KEYS = frozenset({"environments", "memories"})
"""The top-level keys of :func:`memories_json` (import tells such a file by them)."""


def memories_json(data: MemoryExport) -> bytes:
    names = {e.id: e.name for e in data.environments}
    return _dump(
        {
            "environments": [e.model_dump(mode="json") for e in data.environments],
            "memories": [
                {
                    **m.model_dump(mode="json"),
                    "environment": names.get(m.environment_id),
                    "versions": [v.model_dump(mode="json") for v in data.versions.get(m.id, [])],
                }
                for m in sorted(data.memories, key=lambda m: (m.created_at, m.id))
            ],
        }
    ).encode()


def memories_markdown(data: MemoryExport) -> bytes:
    lines = ["# Memories", ""]
    env_seen = None
    for env, layer, items in data.grouped():
        if env.id != env_seen:
            lines += [f"## {env.name}", ""] + ([env.description, ""] if env.description else [])
            env_seen = env.id
        lines += [f"### {layer.value.capitalize()}s", ""]
        for m in items:
            tags = f" · tags: {', '.join(m.tags)}" if m.tags else ""
            lines.append(f"- {m.content.replace(chr(10), ' ')}")
            lines += [f"  - {line}" for line in details(m)]
            lines.append(f"  *{_day(m)} · {m.category} · importance {m.importance:.2f}{tags}*")
        lines.append("")
    return "\n".join(lines).encode()


def memories_xlsx(data: MemoryExport) -> bytes:
    xlsxwriter = _need("xlsxwriter")
    names = {e.id: e.name for e in data.environments}
    out = io.BytesIO()
    book = xlsxwriter.Workbook(out, {"in_memory": True})
    sheet = book.add_worksheet("memories")
    bold = book.add_format({"bold": True})
    sheet.write_row(0, 0, COLUMNS, bold)
    for r, m in enumerate(sorted(data.memories, key=lambda m: (m.created_at, m.id)), start=1):
        row = _plain(m, names)
        sheet.write_row(r, 0, [_cell(row[c]) for c in COLUMNS])
    history = book.add_worksheet("history")
    head = ("memory_id", "version", "action", "at", "actor", "reason", "content", "status")
    history.write_row(0, 0, head, bold)
    r = 1
    for m in sorted(data.memories, key=lambda m: (m.created_at, m.id)):
        for v in data.versions.get(m.id, []):
            history.write_row(
                r,
                0,
                [m.id, v.version, v.action.value, v.at.isoformat(), v.actor or "", v.reason,
                 v.snapshot.content, v.snapshot.status.value],
            )  # fmt: skip
            r += 1
    book.close()
    return out.getvalue()


def memories_docx(data: MemoryExport) -> bytes:
    docx = _need("docx")
    doc = docx.Document()
    doc.add_heading("Memories", 0)
    env_seen = None
    for env, layer, items in data.grouped():
        if env.id != env_seen:
            doc.add_heading(env.name, 1)
            if env.description:
                doc.add_paragraph(env.description)
            env_seen = env.id
        doc.add_heading(f"{layer.value.capitalize()}s", 2)
        for m in items:
            p = doc.add_paragraph(m.content, style="List Bullet")
            run = p.add_run(f"  ({_day(m)} · {m.category})")
            run.italic = True
            for line in details(m):
                doc.add_paragraph(line, style="List Bullet 2")
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


class _Pdf:
    """fpdf2 with a Unicode font when one is installed, else the core font (Latin-1)."""

    def __init__(self, title: str) -> None:
        fpdf = _need("fpdf")
        self.doc = fpdf.FPDF()
        self.doc.set_title(title)
        font = next((f for f in _FONTS if Path(f).is_file()), None)
        self.unicode = font is not None
        if font is not None:
            self.doc.add_font("body", "", font)
            self.family = "body"
        else:
            self.family = "Helvetica"
        self.doc.set_auto_page_break(True, margin=15)
        self.doc.add_page()

    def _text(self, text: str) -> str:
        return text if self.unicode else text.encode("latin-1", "replace").decode("latin-1")

    def heading(self, text: str, size: int) -> None:
        self.doc.set_font(self.family, size=size)
        self.doc.multi_cell(0, size * 0.6, self._text(text), new_x="LMARGIN", new_y="NEXT")
        self.doc.ln(1)

    def para(self, text: str, size: int = 10) -> None:
        self.doc.set_font(self.family, size=size)
        self.doc.multi_cell(0, 5, self._text(text), new_x="LMARGIN", new_y="NEXT")
        self.doc.ln(1)

    def bytes(self) -> bytes:
        return bytes(self.doc.output())


def memories_pdf(data: MemoryExport) -> bytes:
    pdf = _Pdf("Memories")
    pdf.heading("Memories", 18)
    env_seen = None
    for env, layer, items in data.grouped():
        if env.id != env_seen:
            pdf.heading(env.name, 15)
            env_seen = env.id
        pdf.heading(f"{layer.value.capitalize()}s", 12)
        for m in items:
            pdf.para(f"- {m.content}")
            for line in details(m):
                pdf.para(f"    {line}", 9)
            pdf.para(f"    {_day(m)} · {m.category} · importance {m.importance:.2f}", 8)
    return pdf.bytes()


MEMORY_WRITERS: dict[str, Callable[[MemoryExport], bytes]] = {
    "json": memories_json,
    "markdown": memories_markdown,
    "xlsx": memories_xlsx,
    "docx": memories_docx,
    "pdf": memories_pdf,
}


# -- conversations ----------------------------------------------------------------------------
def _when(message: Message) -> str:
    return f" ({message.created_at:%Y-%m-%d %H:%M})" if message.created_at else ""


def conversations_markdown(data: ConversationExport) -> bytes:
    lines = ["# Conversations", ""]
    for conv, messages in data.conversations:
        lines += [f"## {conv.title or conv.id}", ""]
        started = f"{conv.started_at:%Y-%m-%d}" if conv.started_at else "unknown date"
        env = data.environments.get(conv.environment_id, "")
        lines += [f"*{conv.source} · {env} · {started} · {len(messages)} messages*", ""]
        for m in messages:
            lines += [f"**{m.speaker}**{_when(m)}:", "", m.content, ""]
    return "\n".join(lines).encode()


def conversations_docx(data: ConversationExport) -> bytes:
    docx = _need("docx")
    doc = docx.Document()
    doc.add_heading("Conversations", 0)
    for conv, messages in data.conversations:
        doc.add_heading(conv.title or conv.id, 1)
        for m in messages:
            p = doc.add_paragraph()
            p.add_run(f"{m.speaker}{_when(m)}: ").bold = True
            p.add_run(m.content)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def conversations_pdf(data: ConversationExport) -> bytes:
    pdf = _Pdf("Conversations")
    pdf.heading("Conversations", 18)
    for conv, messages in data.conversations:
        pdf.heading(conv.title or conv.id, 14)
        for m in messages:
            pdf.para(f"{m.speaker}{_when(m)}: {m.content}")
    return pdf.bytes()


CONVERSATION_WRITERS: dict[str, Callable[[ConversationExport], bytes]] = {
    "markdown": conversations_markdown,
    "docx": conversations_docx,
    "pdf": conversations_pdf,
}


def writer_for(kind: str, fmt: str) -> Callable[[Any], bytes]:
    table: dict[str, Callable[[Any], bytes]] = (
        dict(MEMORY_WRITERS) if kind == "memories" else dict(CONVERSATION_WRITERS)
    )
    if fmt not in table:
        raise InvalidInput(f"{kind} export formats are {', '.join(table)}; got {fmt!r}")
    return table[fmt]


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency.extra(f"this export format ({module})", "export") from exc
