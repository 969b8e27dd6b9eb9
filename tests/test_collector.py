"""engram.collector: what start-up made is frozen out of later collections, and the young
generation's threshold is raised (engram serve settles once warm)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram import Engram
from engram.collector import YOUNG_THRESHOLD, settle
from engram.servers import _warm
from engram.store.sqlite import SQLiteStore


@pytest.fixture
def restored() -> Iterator[None]:
    """The collector as the test found it (the suite's other tests run in this process)."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_settle_freezes_what_is_alive_and_raises_the_young_threshold(restored: None) -> None:
    gc.set_threshold(700, 11, 12)
    kept = [[i] for i in range(1000)]  # long-lived containers, as a warm process holds
    settle()
    # collections no longer walk them (get_objects lists what collections see)
    assert gc.get_freeze_count() >= len(kept)
    assert not any(o is kept or o is kept[0] for o in gc.get_objects())
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 11, 12)  # the older ones as they were
    made_after = [0]
    assert any(o is made_after for o in gc.get_objects())


def test_settle_refuses_a_threshold_below_one(restored: None) -> None:
    before = gc.get_threshold()
    with pytest.raises(ValueError, match="young must be at least 1"):
        settle(0)
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_server_settles_once_warm(tmp_path: Path, restored: None) -> None:
    engram = Engram(SQLiteStore(tmp_path / "w.db"))
    done = threading.Event()
    seen: list[bool] = []
    _warm(engram, done, lambda: seen.append(done.is_set()))
    assert seen == [False]  # settled after warming, before the server is told it is warm
    assert done.is_set()
    engram.close()
