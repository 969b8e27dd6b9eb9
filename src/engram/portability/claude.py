"""Claude.ai's data export, the legacy single zip and the 2026 manifest with per-category zips:
``conversations.json`` (an array with ``chat_messages``), projects (``projects.json`` or one
``projects/<uuid>.json`` per project) and memories (``memories.json`` or
``memories/<uuid>.json``). Each project becomes an environment with its instructions and
documents as facts; Claude's memory summaries become facts."""

from __future__ import annotations

import re
from typing import Any

from engram.extraction.conversation import NewMessage, Speaker
from engram.models import Layer, NewMemory, Source, validate_env_name
from engram.portability.bundle import (
    Bundle,
    ImportedConversation,
    ImportedEnvironment,
    ImportedMemory,
    Skipped,
    clip,
    from_iso,
    source_id,
    stable_key,
)
from engram.portability.reading import Entry

FORMAT = "claude"
_ROLES = {"human": Speaker.USER, "assistant": Speaker.ASSISTANT}
_DOC_CHARS = 8000
_MEMORY_KEYS = ("conversations_memory", "project_memories", "memory_files")


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def looks_like_conversations(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all(
        isinstance(c, dict) and isinstance(c.get("chat_messages"), list) for c in items[:5]
    )


def looks_like_projects(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all(
        isinstance(p, dict) and "uuid" in p and ("prompt_template" in p or "docs" in p)
        for p in items[:5]
    )


def looks_like_memories(value: Any) -> bool:
    items = _items(value)
    return bool(items) and all(
        isinstance(m, dict) and any(k in m for k in _MEMORY_KEYS) for m in items[:5]
    )


# -- conversations ------------------------------------------------------------------------------
def parse_conversations(entry: Entry, value: Any) -> Bundle:
    out = Bundle(formats=[FORMAT])
    for index, item in enumerate(_items(value)):
        name = str(item.get("name") or "")[:500] if isinstance(item, dict) else ""
        where = f"conversation {index} {name!r}"
        if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
            out.skipped.append(Skipped(entry.file, entry.name, f"{where}: no uuid"))
            continue
        messages = [m for m in map(_message, item["chat_messages"]) if m is not None]
        if not messages:
            out.skipped.append(Skipped(entry.file, entry.name, f"{where}: no messages"))
            continue
        out.conversations.append(
            ImportedConversation(
                key=source_id(item["uuid"]),
                source=FORMAT,
                title=name,
                started_at=from_iso(item.get("created_at")) or messages[0].created_at,
                messages=messages,
                metadata={"summary": item["summary"]} if item.get("summary") else {},
            )
        )
    return out


def _message(item: Any) -> NewMessage | None:
    if not isinstance(item, dict):
        return None
    role = _ROLES.get(str(item.get("sender")))
    if role is None:
        return None
    blocks = item.get("content") if isinstance(item.get("content"), list) else []
    assert isinstance(blocks, list)
    texts = [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]
    text = "\n".join(t for t in texts if t.strip()) or str(item.get("text") or "")
    for attachment in item.get("attachments") or []:
        if isinstance(attachment, dict) and attachment.get("file_name"):
            text += f"\n[attachment: {attachment['file_name']}]"
    if not text.strip():
        return None
    return NewMessage(
        role=role,
        content=clip(text),
        created_at=from_iso(item.get("created_at")),
        external_id=str(item["uuid"])[:200] if item.get("uuid") else None,
    )


# -- projects -----------------------------------------------------------------------------------
def env_name(name: str, uuid: str) -> str:
    """A valid environment name from a project's name (its uuid when nothing is left)."""
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.strip().lower()).strip("-._")[:56]
    try:
        return validate_env_name(slug or f"project-{uuid[:8]}")
    except ValueError:
        return validate_env_name(f"project-{stable_key(uuid)[:8]}")


def parse_projects(entry: Entry, value: Any) -> Bundle:
    out = Bundle(formats=[FORMAT])
    for item in _items(value):
        if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
            out.skipped.append(Skipped(entry.file, entry.name, "a project without a uuid"))
            continue
        title = str(item.get("name") or "")
        if item.get("is_starter_project"):
            out.skipped.append(
                Skipped(entry.file, entry.name, f"project {title!r}: a starter project")
            )
            continue
        env = env_name(title, item["uuid"])
        out.environments.append(
            ImportedEnvironment(
                name=env, description=str(item.get("description") or "")[:2000], key=item["uuid"]
            )
        )
        created = from_iso(item.get("created_at"))
        if isinstance(item.get("prompt_template"), str) and item["prompt_template"].strip():
            text = f"Project instructions ({title}): {item['prompt_template'].strip()}"
            out.memories.append(_fact(env, text, "project", created, item["uuid"], "instructions"))
        for doc in item.get("docs") or []:
            if not isinstance(doc, dict) or not str(doc.get("content") or "").strip():
                continue
            body = str(doc["content"]).strip()
            pieces = [body[i : i + _DOC_CHARS] for i in range(0, len(body), _DOC_CHARS)]
            for n, piece in enumerate(pieces, start=1):
                part = f" (part {n} of {len(pieces)})" if len(pieces) > 1 else ""
                text = f"Document {doc.get('filename') or 'untitled'}{part}: {piece}"
                out.memories.append(
                    _fact(
                        env,
                        text,
                        "document",
                        from_iso(doc.get("created_at")) or created,
                        item["uuid"],
                        f"doc:{doc.get('uuid')}:{n}",
                    )
                )
    return out


def _fact(
    env: str | None, text: str, category: str, created: Any, origin: str, part: str
) -> ImportedMemory:
    return ImportedMemory(
        key=stable_key(FORMAT, origin, part, text),
        memory=NewMemory(
            layer=Layer.FACT,
            content=clip(text),
            category=category,
            source=Source.IMPORT,
            created_at=created,
            tags=["claude"],
            metadata={"import": {"format": FORMAT, "origin": origin}},
        ),
        environment=env,
        source=FORMAT,
    )


# -- memories -----------------------------------------------------------------------------------
def parse_memories(entry: Entry, value: Any, projects: dict[str, str]) -> Bundle:
    """``projects`` maps a project uuid to its environment name (from the projects files)."""
    out = Bundle(formats=[FORMAT])
    for item in _items(value):
        if not isinstance(item, dict):
            continue
        origin = str(item.get("account_uuid") or "account")
        if isinstance(item.get("conversations_memory"), str):
            for line in summary_lines(item["conversations_memory"]):
                out.memories.append(_fact(None, line, "general", None, origin, "memory"))
        project_memories = item.get("project_memories")
        if isinstance(project_memories, dict):
            for uuid, text in sorted(project_memories.items()):
                if not isinstance(text, str):
                    continue
                env = projects.get(uuid)
                if env is None:
                    out.skipped.append(
                        Skipped(
                            entry.file,
                            entry.name,
                            f"memory of project {uuid}: the project is not in the export; "
                            "stored in the target environment",
                        )
                    )
                for line in summary_lines(text):
                    out.memories.append(_fact(env, line, "project", None, uuid, "memory"))
        for memory_file in item.get("memory_files") or []:
            if isinstance(memory_file, dict) and isinstance(memory_file.get("content"), str):
                updated = from_iso(memory_file.get("updated_at"))
                path = str(memory_file.get("path") or "")
                for line in summary_lines(memory_file["content"]):
                    out.memories.append(_fact(None, line, "general", updated, path, "file"))
    return out


_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])")


def _plain(line: str) -> str:
    """A line without Markdown's asterisk bold and italic markers (``**Work**:`` is ``Work:``);
    underscores are left alone (``__init__``, snake_case)."""
    return _EMPHASIS.sub(r"\1", _STRONG.sub(r"\1", line)).strip()


def summary_lines(markdown: str) -> list[str]:
    """A Markdown memory summary as separate statements: bullets and paragraphs, headings
    dropped."""
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(" ".join(paragraph))
            paragraph.clear()

    for raw in markdown.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or set(line) <= {"-", "*", "_", "="}:
            flush()
            continue
        if _BULLET.match(line):
            flush()
            out.append(_BULLET.sub("", line))
        else:
            paragraph.append(line)
    flush()
    return [s for s in (_plain(x) for x in out) if len(s) > 3]
