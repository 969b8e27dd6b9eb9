"""SQLite's ``IN (...)`` lists padded to a multiple of IN_STEP (so that their statements recur
in the connection's cache): the padding repeats the last key, which matches its row once."""

from __future__ import annotations

from pathlib import Path

from engram import LOCAL, Engram, NewMemory
from engram.store.sqlite import SQLiteStore
from engram.store.sqlite.rows import IN_STEP, in_list
from tests.conftest import FakeClock


def test_in_lists_are_padded_with_their_last_value() -> None:
    assert in_list([]) == ("", [])
    marks, params = in_list(["a", "b", "c"])
    assert marks == ",".join("?" * IN_STEP)
    assert params == ["a", "b", "c"] + ["c"] * (IN_STEP - 3)
    assert len(in_list(list(range(IN_STEP)))[1]) == IN_STEP  # a full step is not padded
    assert len(in_list(list(range(IN_STEP + 1)))[1]) == 2 * IN_STEP


def test_padded_reads_return_each_memory_once(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "in.db")
    engram = Engram(store, clock=FakeClock())
    engram.environments.create("pad", LOCAL)
    n = IN_STEP + 3  # one full step and a padded one
    made = engram.memories.add_many(
        [NewMemory(content=f"note {i} on padding") for i in range(n)], LOCAL, "pad"
    )
    ids = [m.id for m in made]
    asked = ids[::-1]
    assert [m.id for m in store.get(asked)] == asked
    fields = store.rank_fields(asked)
    assert sorted(f.memory_id for f in fields) == sorted(ids)
    assert [m.id for m in store.get(ids[:5])] == ids[:5]
    store.close()
