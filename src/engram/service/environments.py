"""Environments: isolated spaces of memories, one per project, owned by a user."""

from __future__ import annotations

from pydantic import ValidationError

from engram.actors import Actor
from engram.clock import Clock
from engram.config import DEFAULT_ENVIRONMENT
from engram.errors import Conflict, InvalidInput, NotFound
from engram.ids import new_id
from engram.models import Environment, MemoryFilter, Status, validate_env_name
from engram.store import Store


class EnvironmentService:
    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def create(self, name: str, actor: Actor, description: str = "") -> Environment:
        try:
            name = validate_env_name(name)
        except ValueError as exc:
            raise InvalidInput(str(exc), field="name") from exc
        if self._store.find_environment(actor.user_id, name) is not None:
            raise Conflict(f"environment {name!r} already exists", name=name)
        env = Environment(
            id=new_id("env_"),
            name=name,
            owner=actor.user_id,
            description=description,
            created_at=self._clock(),
        )
        self._store.create_environment(env)
        return env

    def ensure_default(self, actor: Actor) -> Environment:
        env = self._store.find_environment(actor.user_id, DEFAULT_ENVIRONMENT)
        if env is None:
            try:
                env = self.create(DEFAULT_ENVIRONMENT, actor, "The default environment")
            except Conflict:  # created concurrently by another process
                env = self._store.find_environment(actor.user_id, DEFAULT_ENVIRONMENT)
                assert env is not None
        return env

    def resolve(self, ref: str | None, actor: Actor) -> Environment:
        """An environment by id or by name (the actor's own); ``None`` means the default."""
        if ref is None or ref == "":
            return self.ensure_default(actor)
        env = self._store.get_environment(ref) if ref.startswith("env_") else None
        if env is None:
            env = self._store.find_environment(actor.user_id, ref.strip().lower())
        if env is None:
            if ref.strip().lower() == DEFAULT_ENVIRONMENT:
                return self.ensure_default(actor)
            raise NotFound(f"environment {ref!r} does not exist", environment=ref)
        return env

    def list(self, actor: Actor) -> list[Environment]:
        self.ensure_default(actor)
        return self._store.list_environments(actor.user_id)

    def delete(self, ref: str, actor: Actor, *, purge: bool = False) -> Environment:
        """Delete an environment. One that still holds memories (deleted ones included) is
        refused unless ``purge`` is set, which removes them for good."""
        env = self.resolve(ref, actor)
        held = self._store.count(MemoryFilter(environment_ids=[env.id], statuses=list(Status)))
        if held and not purge:
            raise Conflict(
                f"environment {env.name!r} holds {held} memories; delete with purge to remove "
                "them for good",
                environment=env.name,
                memories=held,
            )
        self._store.delete_environment(env.id)
        return env


def validation_message(exc: ValidationError) -> str:
    """One line naming each invalid field."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "input"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)
