"""Rendering the Soul as XML within a token budget, counted with the real tokenizer."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from engram import LOCAL, Engram
from engram.errors import InvalidInput
from engram.soul import BUILTIN_BLOCKS
from engram.soul.layers import effective
from engram.soul.model import EffectiveBlock, Section
from engram.soul.render import render
from engram.tokens import count_tokens


def paragraph(topic: str, sentences: int) -> str:
    return " ".join(
        f"Sentence {i} about {topic} explains one more detail worth keeping in mind."
        for i in range(sentences)
    )


@pytest.fixture
def full(engram: Engram) -> Engram:
    for spec in BUILTIN_BLOCKS:
        engram.soul.set_block(spec.name, LOCAL, paragraph(spec.name, 6))
    return engram


def elements(text: str) -> list[str]:
    return re.findall(r"^<([a-z_]+)>$", text, flags=re.M)


def test_sections_and_blocks_in_fixed_order(full: Engram) -> None:
    full.soul.set_block("zeta_notes", LOCAL, "Custom, last in context.", section="context")
    full.soul.set_block("alpha_tone", LOCAL, "Custom, last in style.", section="style")
    out = full.soul.render(LOCAL, max_tokens=10_000)
    assert out.dropped == [] and out.truncated == []
    names = [s.name for s in BUILTIN_BLOCKS]
    expected = [
        "soul",
        *names[:4],
        "style",
        *names[4:8],
        "alpha_tone",
        "context",
        *names[8:],
        "zeta_notes",
    ]
    assert elements(out.text) == expected
    assert out.included == [n for n in expected if n not in {s.value for s in Section}]
    assert out.tokens == count_tokens(out.text)
    # well-formed XML once wrapped in a root
    root = ET.fromstring(f"<root>{out.text}</root>")
    assert [child.tag for child in root] == ["soul", "style", "context"]


def test_text_is_escaped(engram: Engram) -> None:
    engram.soul.set_block("rules", LOCAL, "Use a < b && c > d; never write </rules> raw.")
    out = engram.soul.render(LOCAL)
    assert "a &lt; b &amp;&amp; c &gt; d; never write &lt;/rules&gt; raw." in out.text
    assert ET.fromstring(f"<r>{out.text}</r>").find("context/rules").text.strip() == (  # type: ignore[union-attr]
        "Use a < b && c > d; never write </rules> raw."
    )


def test_disabled_and_empty_blocks_are_left_out(engram: Engram) -> None:
    engram.soul.set_block("identity", LOCAL, "You are Ada.")
    engram.soul.set_block("rules", LOCAL, "No force pushes.", enabled=False)
    out = engram.soul.render(LOCAL)
    assert out.included == ["identity"] and out.dropped == []
    assert out.text == "<soul>\n<identity>\nYou are Ada.\n</identity>\n</soul>"


@pytest.mark.parametrize("budget", [0, 40, 120, 250, 400, 700])
def test_small_budget_drops_lowest_priority_first(full: Engram, budget: int) -> None:
    out = full.soul.render(LOCAL, max_tokens=budget)
    assert out.tokens == count_tokens(out.text) <= budget
    view = full.soul.view(LOCAL)
    priority = {b.name: b.priority for b in view.blocks}
    kept = [n for n in out.included if n not in out.truncated]
    # everything fully kept outranks (or ties) everything dropped
    if kept and out.dropped:
        assert min(priority[n] for n in kept) >= max(priority[n] for n in out.dropped)
    # the dropped list runs from the lowest priority up
    assert [priority[n] for n in out.dropped] == sorted(priority[n] for n in out.dropped)
    assert set(out.included) | set(out.dropped) == {s.name for s in BUILTIN_BLOCKS}
    for name in out.truncated:
        assert name in out.included
        assert out.text.count("…") >= 1
    # the order stays fixed whatever survives
    order = [s.name for s in BUILTIN_BLOCKS]
    assert out.included == sorted(out.included, key=order.index)


def test_priority_changes_what_survives(full: Engram) -> None:
    before = full.soul.render(LOCAL, max_tokens=300)
    assert "example_interactions" in before.dropped
    full.soul.set_block("example_interactions", LOCAL, priority=100)
    after = full.soul.render(LOCAL, max_tokens=300)
    assert "example_interactions" in after.included
    assert after.tokens <= 300


def test_the_highest_dropped_block_is_cut_to_fill_the_room() -> None:
    blocks = [
        EffectiveBlock(
            name="identity", section=Section.SOUL, text="You are Ada.", priority=100, enabled=True
        ),
        EffectiveBlock(
            name="rules",
            section=Section.CONTEXT,
            text=paragraph("rules", 20),
            priority=90,
            enabled=True,
        ),
        EffectiveBlock(
            name="expertise",
            section=Section.CONTEXT,
            text=paragraph("x", 20),
            priority=10,
            enabled=True,
        ),
    ]
    out = render(blocks, 120)
    assert out.included == ["identity", "rules"]
    assert out.truncated == ["rules"] and out.dropped == ["expertise"]
    assert out.tokens <= 120 and out.tokens > 80  # the room was used, not wasted
    assert "…\n</rules>" in out.text


def test_render_uses_the_environment_overrides(engram: Engram) -> None:
    engram.environments.create("webapp", LOCAL)
    engram.soul.set_block("current_focus", LOCAL, "Global focus.")
    engram.soul.set_block("current_focus", LOCAL, "Webapp focus.", environment="webapp")
    assert "Webapp focus." in engram.soul.render(LOCAL, "webapp").text
    assert "Global focus." in engram.soul.render(LOCAL).text


def test_negative_budget_is_invalid(engram: Engram) -> None:
    with pytest.raises(InvalidInput, match="max_tokens must not be negative"):
        engram.soul.render(LOCAL, max_tokens=-1)


def test_effective_without_any_rows_is_the_empty_catalogue() -> None:
    blocks = effective([])
    assert [b.name for b in blocks] == [s.name for s in BUILTIN_BLOCKS]
    assert render(blocks, 100).text == ""
