"""Google Takeout's "My Activity" for Gemini Apps (JSON or HTML). Each record is one prompt and
its response; there is no conversation in the export, so records are grouped into
conversations by time gap (or by the ``gemini.google.com/app/<id>`` link when one is given).
Ids come from content and time, so a later export (which prepends newer records) does not
duplicate what an earlier one brought."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

from engram.extraction.conversation import NewMessage, Speaker
from engram.portability.bundle import (
    Bundle,
    ImportedConversation,
    Skipped,
    clip,
    from_iso,
    stable_key,
)
from engram.portability.reading import Entry

FORMAT = "gemini"
GAP = timedelta(minutes=30)
_PROMPT = re.compile(r"^(?:Prompted|Asked)\s+(.*)$", re.S)
_APP_LINK = re.compile(r"gemini\.google\.com/app/([A-Za-z0-9]+)")
_HEADERS = ("Gemini Apps", "Bard")


@dataclass(frozen=True)
class _Turn:
    at: datetime
    prompt: str
    response: str
    thread: str | None


def looks_like(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(r, dict)
            and (r.get("header") in _HEADERS or "Gemini Apps" in (r.get("products") or []))
            for r in value[:5]
        )
    )


def looks_like_html(text: str) -> bool:
    return "outer-cell" in text and ("Gemini Apps" in text or "Bard" in text)


def parse(entry: Entry, value: list[Any]) -> Bundle:
    out = Bundle(formats=[FORMAT])
    turns = []
    for index, record in enumerate(value):
        if not isinstance(record, dict):
            continue
        title = str(record.get("title") or "")
        match = _PROMPT.match(title)
        prompt = match.group(1) if match else str(record.get("text") or "")
        at = from_iso(record.get("time"))
        if not prompt.strip():
            out.skipped.append(
                Skipped(entry.file, entry.name, f"record {index}: {title[:60]!r} is not a prompt")
            )
            continue
        if at is None:
            out.skipped.append(Skipped(entry.file, entry.name, f"record {index}: no time"))
            continue
        responses = [
            _html_text(item["html"])
            for item in record.get("safeHtmlItem") or []
            if isinstance(item, dict) and isinstance(item.get("html"), str)
        ]
        links = " ".join(
            str(d.get("url") or "") for d in record.get("details") or [] if isinstance(d, dict)
        ) + str(record.get("titleUrl") or "")
        thread = _APP_LINK.search(links)
        turns.append(
            _Turn(
                at,
                prompt.strip(),
                "\n\n".join(r for r in responses if r),
                thread and thread.group(1),
            )
        )
    out.conversations.extend(group(turns))
    return out


def group(turns: list[_Turn]) -> list[ImportedConversation]:
    """Oldest first; a new conversation after a gap of more than :data:`GAP` or a change of
    app link."""
    conversations: list[list[_Turn]] = []
    for turn in sorted(turns, key=lambda t: (t.at, t.prompt)):
        last = conversations[-1][-1] if conversations else None
        same_thread = last is not None and (
            (turn.thread is not None and turn.thread == last.thread)
            or (
                (turn.thread is None or last.thread is None or turn.thread == last.thread)
                and turn.at - last.at <= GAP
            )
        )
        if same_thread:
            conversations[-1].append(turn)
        else:
            conversations.append([turn])
    out = []
    for group_ in conversations:
        first = group_[0]
        messages = []
        for turn in group_:
            turn_id = stable_key(FORMAT, turn.at.isoformat(), turn.prompt)
            messages.append(
                NewMessage(
                    role=Speaker.USER,
                    content=clip(turn.prompt),
                    created_at=turn.at,
                    external_id=f"{turn_id}:u",
                )
            )
            if turn.response.strip():
                messages.append(
                    NewMessage(
                        role=Speaker.ASSISTANT,
                        content=clip(turn.response),
                        created_at=turn.at,
                        external_id=f"{turn_id}:a",
                    )
                )
        out.append(
            ImportedConversation(
                key=first.thread or stable_key(FORMAT, first.at.isoformat(), first.prompt),
                source=FORMAT,
                # whole: the import scrubs it, then cuts it (a cut first could split a secret)
                title=first.prompt,
                started_at=first.at,
                messages=messages,
            )
        )
    return out


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "p", "li", "div", "tr", "h1", "h2", "h3"):
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    text = "".join(parser.parts)
    return re.sub(r"\n\s*\n+", "\n\n", text).strip()


# -- HTML ---------------------------------------------------------------------------------------
_CELL = re.compile(r'<div class="outer-cell[^"]*">(.*?)(?=<div class="outer-cell|\Z)', re.S)
_CONTENT = re.compile(r'<div class="content-cell[^"]*">(.*?)</div>', re.S)
_TIMES = (
    "%b %d, %Y, %I:%M:%S %p %Z",
    "%b %d, %Y, %I:%M:%S\u202f%p %Z",
    "%d %b %Y, %H:%M:%S %Z",
    "%Y-%m-%dT%H:%M:%S.%f%z",
)


def _time(text: str) -> datetime | None:
    text = html.unescape(text).strip()
    for fmt in _TIMES:
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def parse_html(entry: Entry, text: str) -> Bundle:
    out = Bundle(formats=[FORMAT])
    turns = []
    for index, cell in enumerate(_CELL.findall(text)):
        contents = _CONTENT.search(cell)
        if contents is None:
            continue
        pieces = re.split(r"<br\s*/?>", contents.group(1), maxsplit=2)
        prompt_text = _html_text(pieces[0])
        match = _PROMPT.match(prompt_text)
        at = _time(_html_text(pieces[1])) if len(pieces) > 1 else None
        if match is None:
            out.skipped.append(
                Skipped(
                    entry.file, entry.name, f"record {index}: {prompt_text[:60]!r} is not a prompt"
                )
            )
            continue
        if at is None:
            out.skipped.append(Skipped(entry.file, entry.name, f"record {index}: no readable time"))
            continue
        response = _html_text(pieces[2]) if len(pieces) > 2 else ""
        link = _APP_LINK.search(cell)
        turns.append(_Turn(at, match.group(1).strip(), response, link and link.group(1)))
    out.conversations.extend(group(turns))
    return out
