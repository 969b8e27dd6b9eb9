"""An assembled block's tokens are the sum of its parts' (no count of the whole): true for any
parts that end in a non-space character and one newline, followed by parts that start with
``<`` or ``-``, whatever whitespace, punctuation, digits or scripts they hold inside."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram import LOCAL, Engram, Layer, NewMemory
from engram.models import EpisodeDetails, ProcedureDetails
from engram.service.context import render_item
from engram.tokens import count_tokens

# characters where cl100k's pre-tokenizer is most context-sensitive: whitespace runs,
# newlines, punctuation runs, digit runs, apostrophes, letters of several scripts
TRICKY = st.text(
    alphabet=st.sampled_from(list(" \t\n\r\f\v.,;:!?'’\"-<>/()[]{}0123456789aZéßЖ中😀_&")),
    max_size=40,
)


def _part(body: str, head: str) -> str:
    """What the assembly makes of a part: a start, the body, no space before one newline."""
    return (head + body).rstrip() + "\n"


@settings(max_examples=400, deadline=None)
@given(
    bodies=st.lists(st.tuples(TRICKY, st.sampled_from(["- ", "<", "</", "-"])), max_size=12),
    first=TRICKY,
)
def test_tokens_of_parts_add_up(bodies: list[tuple[str, str]], first: str) -> None:
    parts = [first.rstrip() + "\n"] if first.strip() else []
    parts += [_part(body, head) for body, head in bodies]
    assert count_tokens("".join(parts)) == sum(count_tokens(p) for p in parts)


def test_rendered_lines_end_without_space(engram: Engram) -> None:
    m = engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content="We planned the move",
            episode=EpisodeDetails(key_decisions=["label the boxes", "pack on Friday \n\n"]),
        ),
        LOCAL,
    )
    line = render_item(m)
    assert line.endswith("pack on Friday\n")


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(decision=TRICKY, step=TRICKY, soul=TRICKY)
def test_block_tokens_are_exact_with_untidy_text(
    engram: Engram, decision: str, step: str, soul: str
) -> None:
    env = f"t{abs(hash((decision, step, soul)))}"
    engram.environments.create(env, LOCAL)
    engram.memories.add_many(
        [
            NewMemory(content="tidy tokens one fact"),
            NewMemory(
                layer=Layer.EPISODE,
                content="tidy tokens episode",
                episode=EpisodeDetails(key_decisions=[decision or "x", decision + " \n"]),
            ),
            NewMemory(
                layer=Layer.PROCEDURE,
                content="tidy tokens procedure",
                procedure=ProcedureDetails(name="p", trigger=step + "\t", steps=[step, "a\n"]),
            ),
        ],
        LOCAL,
        env,
    )
    if soul.strip():
        engram.soul.set_block("identity", LOCAL, soul + " \n", environment=env)
    ctx = engram.context.assemble(LOCAL, "tidy tokens", environment=env, max_tokens=400)
    assert ctx.tiers[1].items  # something was packed
    assert ctx.tokens == count_tokens(ctx.text) <= 400
