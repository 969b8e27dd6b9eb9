"""ChatGPT's data export: ``conversations.json`` (or sharded ``conversations-000.json``, …), an
array of conversations whose messages form a tree (``mapping``). The visible transcript is the
path from ``current_node`` up to the root; other branches are regenerations and edits. Custom
instructions and the ``bio`` tool's memory writes become facts at low confidence. Also the
plain list of memories (``[YYYY-MM-DD] - text`` lines) copied from ChatGPT's settings.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from engram.extraction.conversation import NewMessage, Speaker
from engram.models import Layer, NewMemory, Source
from engram.portability.bundle import (
    LOW_CONFIDENCE,
    Bundle,
    ImportedConversation,
    ImportedMemory,
    Skipped,
    clip,
    from_epoch,
    source_id,
    stable_key,
)
from engram.portability.reading import Entry

FORMAT = "chatgpt"
MEMORY_LIST = "memory-list"
_ROLES = {"user": Speaker.USER, "assistant": Speaker.ASSISTANT}
_MAX_DEPTH = 100_000


def looks_like(value: Any) -> bool:
    """An array of objects with ``mapping`` and ``current_node`` (or empty ``mapping``)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(c, dict) and isinstance(c.get("mapping"), dict) for c in value[:5])
    )


def parse(entry: Entry, value: list[Any]) -> Bundle:
    out = Bundle(formats=[FORMAT])
    for index, item in enumerate(value):
        where = f"conversation {index}"
        if not isinstance(item, dict):
            out.skipped.append(Skipped(entry.file, entry.name, f"{where}: not an object"))
            continue
        _conversation(entry, item, where, out)
    return out


def _conversation(entry: Entry, item: dict[str, Any], where: str, out: Bundle) -> None:
    ext = item.get("conversation_id") or item.get("id")
    title = str(item.get("title") or "")[:500]
    if not isinstance(ext, str) or not ext:
        out.skipped.append(Skipped(entry.file, entry.name, f"{where} {title!r}: no id"))
        return
    mapping: dict[str, Any] = item["mapping"]
    messages: list[NewMessage] = []
    for node_id in _visible_path(mapping, item.get("current_node")):
        message = mapping[node_id].get("message") if isinstance(mapping[node_id], dict) else None
        if not isinstance(message, dict):
            continue
        _traces(entry, ext, node_id, message, out)
        new = _message(node_id, message)
        if new is not None:
            messages.append(new)
    if not messages:
        out.skipped.append(
            Skipped(entry.file, entry.name, f"{where} {title!r}: no visible messages")
        )
        return
    out.conversations.append(
        ImportedConversation(
            key=source_id(ext),
            source=FORMAT,
            title=title,
            started_at=from_epoch(item.get("create_time")) or messages[0].created_at,
            messages=messages,
            metadata={
                k: item[k]
                for k in ("default_model_slug", "gizmo_id", "is_archived")
                if isinstance(item.get(k), str | bool)
            },
        )
    )


def _visible_path(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to ``current_node`` (or, without one, to the newest leaf)."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [k for k, n in mapping.items() if isinstance(n, dict) and not n.get("children")]
        if not leaves:
            return []
        current = max(leaves, key=lambda k: _node_time(mapping[k]))
    path: list[str] = []
    seen: set[str] = set()
    node: Any = current
    while isinstance(node, str) and node in mapping and node not in seen:
        if len(path) > _MAX_DEPTH:
            break
        seen.add(node)
        path.append(node)
        parent = mapping[node].get("parent") if isinstance(mapping[node], dict) else None
        node = parent
    return path[::-1]


def _node_time(node: dict[str, Any]) -> float:
    message = node.get("message")
    stamp = message.get("create_time") if isinstance(message, dict) else None
    return float(stamp) if isinstance(stamp, int | float) else 0.0


def _hidden(message: dict[str, Any]) -> bool:
    meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    return (
        message.get("weight") == 0
        or bool(meta.get("is_visually_hidden_from_conversation"))
        or bool(meta.get("is_user_system_message"))
        or message.get("recipient", "all") not in ("all", None)
        or message.get("channel") not in (None, "final")
    )


def _message(node_id: str, message: dict[str, Any]) -> NewMessage | None:
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    assert isinstance(author, dict)
    role = _ROLES.get(str(author.get("role")))
    if role is None or _hidden(message):
        return None
    text = _text(message.get("content"))
    if not text:
        return None
    return NewMessage(
        role=role,
        content=clip(text),
        created_at=from_epoch(message.get("create_time")),
        external_id=str(message.get("id") or node_id)[:200],
    )


def _text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    kind = content.get("content_type")
    if kind in ("text", "multimodal_text"):
        parts = content.get("parts") if isinstance(content.get("parts"), list) else []
        assert isinstance(parts, list)
        pieces = []
        for part in parts:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and "asset_pointer" in part:
                pieces.append("[image]")
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
        text = "\n".join(p for p in pieces if p.strip())
        # a message of images only is still a turn; one of whitespace is not
        return text.strip()
    if kind == "code" and isinstance(content.get("text"), str):
        lang = content.get("language") if isinstance(content.get("language"), str) else ""
        return f"```{lang}\n{content['text']}\n```" if content["text"].strip() else ""
    return ""  # tool output, browsing, reasoning, errors: not part of the transcript


def _traces(entry: Entry, ext: str, node_id: str, message: dict[str, Any], out: Bundle) -> None:
    """Memory traces: the ``bio`` tool's writes, the memory snapshot, custom instructions."""
    content = message.get("content") if isinstance(message.get("content"), dict) else {}
    assert isinstance(content, dict)
    at = from_epoch(message.get("create_time"))
    found: list[tuple[str, str]] = []
    if message.get("recipient") == "bio":
        parts = content.get("parts") if isinstance(content.get("parts"), list) else []
        assert isinstance(parts, list)
        found += [("bio", p) for p in parts if isinstance(p, str) and p.strip()]
    kind = content.get("content_type")
    if kind == "user_editable_context":
        for field, label in (("user_profile", "About me"), ("user_instructions", "How to respond")):
            if isinstance(content.get(field), str) and content[field].strip():
                found.append(("custom-instructions", f"{label}: {content[field].strip()}"))
    if kind == "model_editable_context" and isinstance(content.get("model_set_context"), str):
        found += [("memory-snapshot", line) for line in _memory_lines(content["model_set_context"])]
    meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    ctx = meta.get("user_context_message_data")
    if isinstance(ctx, dict):
        for field, label in (
            ("about_user_message", "About me"),
            ("about_model_message", "How to respond"),
        ):
            if isinstance(ctx.get(field), str) and ctx[field].strip():
                found.append(("custom-instructions", f"{label}: {ctx[field].strip()}"))
    for kind_tag, text in found:
        out.memories.append(
            ImportedMemory(
                # the same instruction repeated in many conversations is one memory
                key=stable_key(FORMAT, kind_tag, text),
                memory=NewMemory(
                    layer=Layer.FACT,
                    content=clip(text),
                    category="preference" if kind_tag == "custom-instructions" else "general",
                    confidence=LOW_CONFIDENCE,
                    source=Source.IMPORT,
                    tags=["chatgpt", kind_tag],
                    created_at=at,
                    metadata={"import": {"format": FORMAT, "conversation": ext, "node": node_id}},
                ),
                source=FORMAT,
            )
        )


_SNAPSHOT_LINE = re.compile(r"^\s*(?:\d+\.\s*)?(?:\[[^\]]*\]\s*-?\s*)?(.+?)\s*$")


def _memory_lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        match = _SNAPSHOT_LINE.match(line)
        if match and len(match.group(1)) > 3:
            out.append(match.group(1))
    return out


# -- the plain list of memories ------------------------------------------------------------------
_LIST_LINE = re.compile(r"^\s*(?:[-*]\s*)?\[?(\d{4}-\d{2}-\d{2})\]?\s*[-–:]\s*(.+?)\s*$")


def looks_like_memory_list(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()][:20]
    return bool(lines) and sum(bool(_LIST_LINE.match(line)) for line in lines) >= max(
        1, len(lines) // 2
    )


def parse_memory_list(entry: Entry, text: str) -> Bundle:
    out = Bundle(formats=[MEMORY_LIST])
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _LIST_LINE.match(line)
        if match is None:
            out.skipped.append(
                Skipped(entry.file, entry.name, f"line {number}: not '[YYYY-MM-DD] - text'")
            )
            continue
        try:
            day = datetime.strptime(match.group(1), "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            out.skipped.append(
                Skipped(entry.file, entry.name, f"line {number}: {match.group(1)} is not a date")
            )
            continue
        text_ = match.group(2)
        out.memories.append(
            ImportedMemory(
                key=stable_key(MEMORY_LIST, match.group(1), text_),
                memory=NewMemory(
                    layer=Layer.FACT,
                    content=clip(text_),
                    source=Source.IMPORT,
                    created_at=day,
                    tags=["imported"],
                    metadata={"import": {"format": MEMORY_LIST}},
                ),
                source=MEMORY_LIST,
            )
        )
    return out
