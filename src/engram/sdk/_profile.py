"""The cross-project profile's calls (``client.profile``), described once without I/O like
those in ``_calls``: your habits across projects (list, add, edit, delete), whether learning
from your prompts is on (status), and opting in or out (set_learning). Answers are the REST
API's JSON objects."""

from __future__ import annotations

import builtins
from typing import Any

from engram.sdk._calls import Call, _params, seg


class ProfileCalls:
    base = "/api/v1/profile"

    def list(self, *, candidates: bool = False) -> Call[builtins.list[dict[str, Any]]]:
        """Your habits, oldest first (``candidates``: also those seen in one project so far)."""
        params = _params(candidates=candidates) if candidates else {}
        return Call("GET", self.base, builtins.list[dict[str, Any]], params)

    def add(self, text: str) -> Call[dict[str, Any]]:
        """Write a habit by hand (it joins the profile at once)."""
        return Call("POST", self.base, dict[str, Any], {}, {"text": text})

    def edit(self, habit_id: str, text: str) -> Call[dict[str, Any]]:
        return Call("PATCH", f"{self.base}/{seg(habit_id)}", dict[str, Any], {}, {"text": text})

    def delete(self, habit_id: str) -> Call[dict[str, Any]]:
        return Call("DELETE", f"{self.base}/{seg(habit_id)}", dict[str, Any])

    def status(self) -> Call[dict[str, Any]]:
        """Whether learning is on, and how many habits there are."""
        return Call("GET", f"{self.base}/status", dict[str, Any])

    def set_learning(self, *, enabled: bool) -> Call[dict[str, Any]]:
        """Opt in to (or out of) learning habits from your own prompts."""
        return Call("PUT", f"{self.base}/learning", dict[str, Any], {}, {"enabled": enabled})
