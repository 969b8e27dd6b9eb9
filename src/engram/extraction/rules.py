"""The LLM-free extractor (the default): facts, an episode and procedures from a transcript."""

from __future__ import annotations

from typing import Protocol

from engram.extraction.conversation import Speaker, Transcript
from engram.extraction.episodes import episode_proposal
from engram.extraction.facts import fact_proposals
from engram.extraction.procedures import rules, step_lists
from engram.extraction.proposals import Extraction, Proposal
from engram.extraction.sentences import sentences


class Extractor(Protocol):
    """Anything that turns a transcript into proposals (the rules, an LLM)."""

    def run(self, transcript: Transcript) -> Extraction: ...


def _display(speaker: str) -> str:
    return f"the {speaker}" if speaker in (Speaker.USER.value, Speaker.ASSISTANT.value) else speaker


class RuleExtractor:
    """Proposes memories with patterns and TF-IDF salience; deterministic, no model."""

    name = "rules"

    def __init__(self, *, episodes: bool = True, min_messages_for_episode: int = 2) -> None:
        self.episodes = episodes
        self.min_messages_for_episode = min_messages_for_episode

    def extract(self, transcript: Transcript) -> list[Proposal]:
        items = sentences(transcript.messages)
        people = transcript.participants
        # who "we" means besides the speaker: the other people, never the assistant (a user's
        # "we deploy on Fridays" is their team's habit, not the assistant's)
        people_only = [q for q in people if q != Speaker.ASSISTANT.value]
        others = {
            p: " and ".join(_display(q) for q in people_only if q != p) or "others" for p in people
        }
        facts = fact_proposals(items, others)
        procedures = step_lists(transcript.messages) + rules(items)
        out = facts + procedures
        part = transcript.summarised
        if self.episodes and len(part) >= self.min_messages_for_episode:
            decisions = [f for f in facts if f.kind == "decision"]
            if len(part) < len(transcript.messages):  # the episode of the new part alone
                ids = {m.id for m in part}
                decisions = [f for f in decisions if ids.intersection(f.source_message_ids)]
                items = [s for s in items if s.message.id in ids]
                transcript = transcript.model_copy(update={"messages": part})
            episode = episode_proposal(transcript, items, decisions)
            if episode is not None:
                out.append(episode)
        return out

    def run(self, transcript: Transcript) -> Extraction:
        return Extraction(proposals=self.extract(transcript), extractor=self.name)
