"""Coding agents' local session transcripts (internal, unversioned formats; parsed
defensively): Claude Code (``~/.claude/projects/<project>/<session>.jsonl``), Codex
(``~/.codex/sessions/…/rollout-….jsonl``) and Gemini CLI (``~/.gemini/tmp/<project>/chats/``).
Only what a person said and the agent answered is kept; tool calls, tool output and injected
context are not."""

from __future__ import annotations

from typing import Any

from engram.extraction.conversation import NewMessage, Speaker
from engram.portability.bundle import (
    Bundle,
    ImportedConversation,
    Skipped,
    clip,
    from_iso,
    source_id,
    stable_key,
)
from engram.portability.reading import Entry

CLAUDE_CODE = "claude-code"
CODEX = "codex"
GEMINI_CLI = "gemini-cli"
_INJECTED = ("<environment_context>", "<user_instructions>", "<hook_context>", "<system-reminder>")


def kind_of_lines(lines: list[Any]) -> str | None:
    """Which agent wrote these JSON lines, if any."""
    objects = [x for x in lines[:50] if isinstance(x, dict)]
    if any(x.get("type") in ("session_meta", "response_item") and "payload" in x for x in objects):
        return CODEX
    if any("sessionId" in x and isinstance(x.get("message"), dict) for x in objects):
        return CLAUDE_CODE
    if any(x.get("type") in ("user", "gemini") and "content" in x for x in objects):
        return GEMINI_CLI
    return None


def looks_like_gemini_session(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and ("sessionId" in value or "projectHash" in value)
    )


def _blocks_text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"]
        for b in content
        if isinstance(b, dict) and b.get("type") in kinds and isinstance(b.get("text"), str)
    )


def _keep(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith(_INJECTED)


def _conversation(
    entry: Entry, source: str, session: str | None, messages: list[NewMessage], cwd: str | None
) -> Bundle:
    out = Bundle(formats=[source])
    if not messages:
        out.skipped.append(Skipped(entry.file, entry.name, f"{source} session: no messages"))
        return out
    first_user = next((m.content for m in messages if m.role is Speaker.USER), messages[0].content)
    out.conversations.append(
        ImportedConversation(
            key=source_id(session) if session else stable_key(source, entry.name),
            source=source,
            # whole: the import scrubs it, then cuts it (a cut first could split a secret)
            title=" ".join(first_user.split()),
            started_at=messages[0].created_at,
            messages=messages,
            metadata={"cwd": cwd} if cwd else {},
        )
    )
    return out


def parse_claude_code(entry: Entry, lines: list[Any]) -> Bundle:
    messages, session, cwd = [], None, None
    for line in lines:
        if not isinstance(line, dict) or line.get("isMeta") or line.get("isSidechain"):
            continue
        session = session or line.get("sessionId")
        cwd = cwd or line.get("cwd")
        message = line.get("message")
        if line.get("type") not in ("user", "assistant") or not isinstance(message, dict):
            continue
        role = Speaker.USER if line["type"] == "user" else Speaker.ASSISTANT
        text = _blocks_text(message.get("content"), ("text",))
        if _keep(text):
            messages.append(
                NewMessage(
                    role=role,
                    content=clip(text),
                    created_at=from_iso(line.get("timestamp")),
                    external_id=str(line["uuid"])[:200] if line.get("uuid") else None,
                )
            )
    return _conversation(entry, CLAUDE_CODE, session, messages, cwd)


def parse_codex(entry: Entry, lines: list[Any]) -> Bundle:
    messages, session, cwd = [], None, None
    for number, line in enumerate(lines):
        if not isinstance(line, dict) or not isinstance(line.get("payload"), dict):
            continue
        payload = line["payload"]
        if line.get("type") == "session_meta":
            session = session or payload.get("id")
            cwd = cwd or payload.get("cwd")
            continue
        if line.get("type") != "response_item" or payload.get("type") != "message":
            continue
        role = {"user": Speaker.USER, "assistant": Speaker.ASSISTANT}.get(str(payload.get("role")))
        text = _blocks_text(payload.get("content"), ("input_text", "output_text", "text"))
        if role is not None and _keep(text):
            messages.append(
                NewMessage(
                    role=role,
                    content=clip(text),
                    created_at=from_iso(line.get("timestamp")),
                    external_id=f"line-{number}",
                )
            )
    return _conversation(entry, CODEX, session, messages, cwd)


def parse_gemini_cli(entry: Entry, records: list[Any], session: str | None = None) -> Bundle:
    messages = []
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            continue
        session = session or record.get("sessionId")
        role = {"user": Speaker.USER, "gemini": Speaker.ASSISTANT}.get(str(record.get("type")))
        content = record.get("content")
        text = content if isinstance(content, str) else _blocks_text(content, ("text",))
        if isinstance(content, list) and not text:
            text = "\n".join(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        if role is not None and _keep(text):
            messages.append(
                NewMessage(
                    role=role,
                    content=clip(text),
                    created_at=from_iso(record.get("timestamp")),
                    external_id=str(record.get("id") or f"line-{number}")[:200],
                )
            )
    return _conversation(entry, GEMINI_CLI, session, messages, None)
