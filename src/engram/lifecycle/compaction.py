"""Compaction: the durable facts worth keeping from a cold episode, picked without an LLM.

The episode's key decisions come first (each becomes a ``decision`` fact); then the summary's
most salient sentences: those that state a decision, a preference, a rule or a concrete value,
scored by cue words, numbers and named things, and never questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.lifecycle.config import LifecycleConfig
from engram.lifecycle.dedup import jaccard, word_set
from engram.models import Memory
from engram.text import content_words, words

_SENTENCE_RE = re.compile(r"(?<=[.!?;])\s+|\n+")
_CUES = frozenset(
    """decided decide decision agreed agree chose choose chosen will must always never prefer
    prefers preferred use uses using should rule policy require requires required deadline
    fixed fix root cause because switched moved adopt adopted standard default""".split()  # noqa: SIM905
)


@dataclass(frozen=True, slots=True)
class PickedFact:
    content: str
    category: str
    score: float


_SPEAKER_RE = re.compile(r"^(?:user|assistant|[A-Z][\w'-]*(?: [A-Z][\w'-]*)?): (?=\S)")
"""An episode's "Caroline: ..." label before what was said (not part of a fact)."""


def sentences(text: str) -> list[str]:
    """The sentences of an episode's text, each without its speaker's label."""
    out = []
    for part in _SENTENCE_RE.split(text):
        part = _SPEAKER_RE.sub("", part.strip(" -*\t"))
        if part:
            out.append(part)
    return out


def salience(sentence: str) -> float:
    ws = words(sentence)
    if not ws:
        return 0.0
    cues = sum(w in _CUES for w in ws)
    values = sum(any(c.isdigit() for c in w) for w in ws)
    named = sum(1 for tok in sentence.split()[1:] if tok[:1].isupper())
    return 2.0 * cues + 1.0 * values + 0.5 * named + 0.1 * len(content_words(sentence))


def pick_facts(episode: Memory, cfg: LifecycleConfig) -> list[PickedFact]:
    """Up to ``compaction_max_facts`` facts: key decisions, then salient sentences."""
    picked: list[PickedFact] = []
    seen: list[frozenset[str]] = []

    def add(text: str, category: str, score: float) -> None:
        text = text.strip().rstrip(";")
        ws = word_set(text)
        if len(ws) < cfg.compaction_min_words and category != "decision":
            return
        if not ws or any(jaccard(ws, s) >= cfg.dedup_jaccard for s in seen):
            return
        seen.append(ws)
        picked.append(PickedFact(text, category, score))

    if episode.episode is not None:
        for decision in episode.episode.key_decisions:
            add(decision, "decision", float("inf"))
    ranked = sorted(
        (s for s in sentences(episode.content) if not s.endswith("?")),
        key=salience,
        reverse=True,
    )
    for sentence in ranked:
        score = salience(sentence)
        if score < 2.0:  # no cue word nor value: narrative, not a fact
            break
        add(sentence, "fact", score)
    return picked[: cfg.compaction_max_facts]
