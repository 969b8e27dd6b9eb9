"""Extraction's summaries of a long conversation's parts when an LLM's prompt was cut."""

from __future__ import annotations

from engram import Engram, Layer
from engram.extraction.conversation import Transcript
from engram.extraction.proposals import Extraction
from engram.extraction.rules import RuleExtractor
from engram.models import MemoryFilter
from tests.test_extraction_service import TOPICS, deliver_turns


class CutSometimes:
    """The rules, but one run reports its prompt cut (as the LLM does for a long transcript)."""

    name = "cut"

    def __init__(self) -> None:
        self.inner = RuleExtractor()
        self.runs = 0

    def run(self, transcript: Transcript) -> Extraction:
        self.runs += 1
        out = self.inner.run(transcript)
        return out.model_copy(update={"whole": self.runs != 4})


def test_a_cut_prompt_that_goes_on_with_a_part_replaces_its_summary(engram: Engram) -> None:
    """The review of stop 35: a run going on with a part whose extractor reported its prompt cut
    stored its summary beside the part's, without a part of its own, so both summarised the
    same messages."""
    deliver_turns(engram, "long-1", TOPICS[:24], CutSometimes())
    flt = MemoryFilter(layers=[Layer.EPISODE], categories=["episode"])
    active = engram.store.list_memories(flt, limit=50)
    spans = []
    for m in active:
        pos = (
            sorted(
                int(p.position)
                for p in engram.store.conversations.messages(m.thread)
                if p.id in m.metadata.get("source_message_ids", [])
            )
            if m.metadata.get("source_message_ids")
            else []
        )
        spans.append(
            (
                m.metadata.get("from_position"),
                m.metadata.get("to_position"),
                (pos[0], pos[-1]) if pos else None,
            )
        )
    covered: dict[int, int] = {}
    for _, _, span in spans:
        if span:
            for p in range(span[0], span[1] + 1):
                covered[p] = covered.get(p, 0) + 1
    twice = sorted(p for p, n in covered.items() if n > 1)
    assert not twice, f"messages summarised by two active episodes: {twice}"
