"""Procedures from a conversation: numbered or bulleted step lists, and rules of the form
"always X", "never X", "before/after/when X, do Y"."""

from __future__ import annotations

import re

from engram.extraction.conversation import Message, Speaker
from engram.extraction.proposals import Proposal
from engram.extraction.sentences import Sentence, list_item
from engram.models import ProcedureDetails

MIN_STEPS = 2
_RULE_RE = re.compile(
    r"^(?:(?:please|remember to|make sure (?:to|you)|rule:)\s+)?"
    r"(?:(?P<when>(?:before|after|when|whenever|once|if)\s[^,]{3,120}?),\s*"
    r"(?P<do>(?:always |never |please )?[a-z].{3,200}?)"
    r"|(?P<plain>(?:always|never)\s.{3,200}?))[.!]?$",
    re.I,
)
_INTRO_RE = re.compile(
    r"(?:^|\b)(?:to|how to|steps? (?:to|for)|here'?s how to)\s+(.{3,80}?)\s*:?$", re.I
)


def _name(text: str, limit: int = 80) -> str:
    text = text.strip().rstrip(":.").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_lists(messages: list[Message]) -> list[Proposal]:
    """Runs of ≥2 consecutive list items; the line before the run names the procedure."""
    out: list[Proposal] = []
    for msg in messages:
        if msg.role not in (Speaker.USER, Speaker.ASSISTANT):
            continue
        lines = [ln for ln in msg.content.splitlines() if ln.strip()]
        i = 0
        while i < len(lines):
            steps: list[str] = []
            j = i
            while j < len(lines) and (item := list_item(lines[j])) is not None:
                steps.append(item)
                j += 1
            if len(steps) >= MIN_STEPS:
                intro = lines[i - 1].strip() if i > 0 else ""
                match = _INTRO_RE.search(intro)
                name = _name(match.group(1) if match else intro or steps[0])
                conf = 0.75 if msg.role is Speaker.USER else 0.6
                out.append(
                    Proposal(
                        layer="procedure",
                        content=_name(intro, 300) or f"Steps: {name}",
                        category="procedure",
                        kind="steps",
                        importance=0.6,
                        confidence=conf,
                        subject=msg.author,
                        source_message_ids=[msg.id],
                        procedure=ProcedureDetails(
                            name=name, trigger=_name(intro, 200), steps=steps[:100]
                        ),
                    )
                )
                i = j
            else:
                i = max(j, i + 1)
    return out


def rules(items: list[Sentence]) -> list[Proposal]:
    """Rules stated by a person (not the assistant): always/never/before X, do Y."""
    out: list[Proposal] = []
    for sentence in items:
        if sentence.message.role is not Speaker.USER or sentence.is_question:
            continue
        if list_item(sentence.text) is not None:
            continue
        match = _RULE_RE.match(sentence.text.strip())
        if match is None:
            continue
        when = (match.group("when") or "").strip()
        do = (match.group("do") or match.group("plain") or "").strip().rstrip(".!")
        if len(do.split()) < 2:
            continue
        text = sentence.text.strip()
        out.append(
            Proposal(
                layer="procedure",
                content=text,
                category="rule",
                kind="rule",
                importance=0.7,
                confidence=0.75,
                subject=sentence.message.author,
                source_message_ids=[sentence.message.id],
                procedure=ProcedureDetails(name=_name(text), trigger=when, steps=[do]),
            )
        )
    return out
