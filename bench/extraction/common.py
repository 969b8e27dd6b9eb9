"""LoCoMo sessions as extractor transcripts, shared by the coverage and recall benchmarks."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engram.extraction import Conversation, Message, Speaker, Transcript

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared/data/locomo/locomo_dev.json"


def sessions(sample: dict[str, Any]) -> list[tuple[int, list[dict[str, str]]]]:
    conv = sample["conversation"]
    out = []
    for key, turns in conv.items():
        if key.startswith("session_") and not key.endswith("date_time") and turns:
            out.append((int(key.split("_")[1]), turns))
    return sorted(out)


def transcript(sample_id: str, n: int, turns: list[dict[str, str]]) -> Transcript:
    """Session ``n`` as one conversation: both speakers are people (role ``user``, author =
    speaker) and every message's id is the turn's dia_id."""
    cid = f"{sample_id}-s{n}"
    conv = Conversation(id=cid, environment_id="bench", created_at=datetime.now(UTC))
    messages = [
        Message(
            id=t["dia_id"],
            conversation_id=cid,
            position=i,
            role=Speaker.USER,
            author=t["speaker"],
            content=t["text"] or "…",
        )
        for i, t in enumerate(turns, start=1)
    ]
    return Transcript(conversation=conv, messages=messages)
