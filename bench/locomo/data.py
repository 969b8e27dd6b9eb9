"""Loading LoCoMo conversations and questions (see shared/data/locomo/README.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

_RELATIVE = Path("shared") / "data" / "locomo" / "locomo_dev.json"
# the checkout's sibling shared/ directory (a worktree sits one level deeper)
DEFAULT_PATH = next(
    (p / _RELATIVE for p in Path(__file__).resolve().parents[3:5] if (p / _RELATIVE).exists()),
    Path(__file__).resolve().parents[3] / _RELATIVE,
)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str  # "speaker: text [shared a photo: caption]"
    at: datetime

    @property
    def said(self) -> str:
        """What the speaker said, without the "speaker: " prefix (as a chat app delivers it)."""
        return self.text.removeprefix(f"{self.speaker}: ")


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str = ""


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]


def _when(value: str) -> datetime:
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, str]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shared a photo: {turn['blip_caption']}]"
    return text


def load(path: Path = DEFAULT_PATH) -> list[Conversation]:
    out = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        turns: list[Turn] = []
        n = 1
        while f"session_{n}" in conv:
            at = _when(conv[f"session_{n}_date_time"])
            for t in conv[f"session_{n}"]:
                turns.append(Turn(t["dia_id"], n, t["speaker"], turn_text(t), at))
            n += 1
        ids = {t.dia_id for t in turns}
        questions = []
        for qa in sample["qa"]:
            evidence = tuple(
                e.strip() for raw in qa.get("evidence", []) for e in raw.split(";") if e.strip()
            )
            evidence = tuple(e for e in evidence if e in ids)
            if evidence:
                answer = str(qa.get("answer", ""))
                questions.append(Question(qa["question"], int(qa["category"]), evidence, answer))
        out.append(Conversation(sample["sample_id"], turns, questions))
    return out
