"""Tables of memories that stay readable at any console width: a memory's id is kept on one
line (to be copied), its content folds, and below ``WIDE_FROM`` columns only what identifies a
memory and says what it holds is shown, so the content is not squeezed to a few letters (at 80
columns, seven columns left it five)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

from engram.cli.common import console

WIDE_FROM = 120
"""Consoles at least this wide get every column; narrower ones the ``narrow`` set."""


def memory_table(
    rows: Sequence[Mapping[str, str]],
    wide: Sequence[str],
    narrow: Sequence[str],
    *,
    title: str | None = None,
    fold: str = "content",
) -> Table:
    """A table of ``rows`` (each a value by column) with the ``wide`` columns, or the
    ``narrow`` ones on a console narrower than ``WIDE_FROM``; the ``fold`` column folds, the
    id stays on one line, the others are cut with an ellipsis."""
    cols = wide if console.width >= WIDE_FROM else narrow
    table = Table(title=title, show_lines=False)
    for col in cols:
        table.add_column(col, overflow="fold" if col == fold else "ellipsis", no_wrap=col == "id")
    for row in rows:
        table.add_row(*(row[c] for c in cols))
    return table
