"""The user's cross-project profile: list, edit and delete their habits."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from engram.mcp.binding import Binding
from engram.mcp.tools._common import DESTRUCTIVE, READ, UPDATE, WRITE, tool
from engram.service.profile import Habit

HabitId = Annotated[str, Field(description="A habit id, e.g. 'hab_…', from profile_list.")]
HabitText = Annotated[str, Field(description="The habit, in the user's words.")]


class Profile(BaseModel):
    items: list[Habit] = Field(description="The habits, oldest first")


def register(server: MCPServer[Any], b: Binding) -> None:
    @tool(server, "List the user's habits across projects", READ)
    def profile_list(
        candidates: Annotated[
            bool, Field(description="Also the habits seen in one project so far.")
        ] = False,
    ) -> Profile:
        """The user's habits that hold across projects (package manager, test layout, style,
        tools), learned from their own prompts. They rank below the user's current
        instruction, the repository's rules and the project's memory."""
        actor = b.current_actor()
        entries = b.engram.profile.list(actor, candidates=candidates)
        return Profile(items=[Habit.of(e) for e in entries])

    @tool(server, "Add a habit to the user's profile", WRITE)
    def profile_add(text: HabitText) -> Habit:
        """Only when the user states a habit that holds in all their projects ("always use uv,
        everywhere"); a project's own rule belongs in remember instead."""
        return Habit.of(b.engram.profile.add(text, b.current_actor()))

    @tool(server, "Change a habit's wording", UPDATE)
    def profile_update(
        habit_id: HabitId,
        text: HabitText,
    ) -> Habit:
        """Correct a habit when the user says it changed; only when they ask."""
        return Habit.of(b.engram.profile.edit(habit_id, text, b.current_actor()))

    @tool(server, "Delete a habit", DESTRUCTIVE)
    def profile_delete(habit_id: HabitId) -> Habit:
        """Remove a habit from the user's profile for good; only when they ask."""
        return Habit.of(b.engram.profile.delete(habit_id, b.current_actor()))
