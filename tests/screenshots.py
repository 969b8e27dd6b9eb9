"""Where the browser tests write their screenshots: the README's ``docs/screenshots`` when
``ENGRAM_UPDATE_SCREENSHOTS=1`` is set (to refresh them on purpose), otherwise a scratch
directory, so that a test run does not rewrite tracked files. The screenshots are taken either
way."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"


def shots_dir() -> Path:
    if os.environ.get("ENGRAM_UPDATE_SCREENSHOTS") == "1":
        target = DOCS
    else:
        target = Path(tempfile.gettempdir()) / "engram-screenshots"
    target.mkdir(parents=True, exist_ok=True)
    return target
