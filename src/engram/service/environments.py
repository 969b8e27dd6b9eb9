"""Environments: isolated spaces of memories, one per project, owned by a user and shared with
members who hold a role (owner, writer, reader).

Access is enforced here, so every edge (REST, MCP, CLI) gets the same rules: an environment the
actor cannot see does not exist for them (``NotFound``, never a hint that it exists); one they
see but may not change raises ``PermissionDenied``.
"""

from __future__ import annotations

import builtins

from pydantic import ValidationError

from engram.accounts import Member, Role, Scope, User
from engram.actors import Actor
from engram.clock import Clock
from engram.config import DEFAULT_ENVIRONMENT
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied, validation_lines
from engram.ids import new_id
from engram.models import Environment, MemoryFilter, Status, validate_env_name
from engram.service.audit import AuditLog
from engram.store import Store

SCOPE_FOR = {Role.READER: Scope.READ, Role.WRITER: Scope.WRITE, Role.OWNER: Scope.WRITE}
"""The key scope each role's action needs: reading needs ``read``, changing needs ``write``."""


KEPT_LOOKUPS = 4096
"""Environment lookups kept per process (by reference, user and project)."""


def require_scope(actor: Actor, scope: Scope) -> None:
    if not actor.can(scope):
        raise PermissionDenied(f"this key lacks the {scope.value!r} scope", scope=scope.value)


class EnvironmentService:
    def __init__(self, store: Store, clock: Clock, audit: AuditLog | None = None) -> None:
        self._store = store
        self._clock = clock
        self.audit = audit or AuditLog(store, clock)
        self._kept: dict[
            tuple[str, str, str | None, bool], tuple[int, Environment, Role | None]
        ] = {}

    # -- access ------------------------------------------------------------------------------
    def role_of(self, env: Environment, actor: Actor) -> Role | None:
        """The actor's role in ``env``: owner for its owner, else their membership, else None."""
        if env.owner == actor.user_id:
            return Role.OWNER
        member = self._store.accounts.get_member(env.id, actor.user_id)
        return None if member is None else member.role

    def visible(self, env_id: str, actor: Actor) -> Environment | None:
        """The environment ``env_id`` if the actor has a role in it, else None."""
        env = self._store.get_environment(env_id)
        return env if env is not None and self.role_of(env, actor) is not None else None

    def roles(self, actor: Actor) -> dict[str, Role]:
        """Every environment the actor can see, with their role in it."""
        out = {m.environment_id: m.role for m in self._store.accounts.memberships(actor.user_id)}
        out.update({e.id: Role.OWNER for e in self._store.list_environments(actor.user_id)})
        return out

    def check(
        self,
        env: Environment,
        role: Role | None,
        need: Role,
        actor: Actor,
        scope: Scope | None = None,
    ) -> None:
        """NotFound when the actor has no role; else the key scope (``scope``, default the one
        ``need`` implies) and then the role are checked."""
        if role is None:
            raise NotFound(f"environment {env.id!r} does not exist", environment=env.id)
        require_scope(actor, scope or SCOPE_FOR[need])
        if not role.allows(need):
            raise PermissionDenied(
                f"you are a {role.value} of environment {env.name!r}; this needs {need.value}",
                environment=env.id,
                role=role.value,
            )

    # -- environments ------------------------------------------------------------------------
    def create(self, name: str, actor: Actor, description: str = "") -> Environment:
        require_scope(actor, Scope.WRITE)
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
        entry = self.audit.entry(
            actor, "environment.create", environment_id=env.id, targets=[env.id]
        )
        self._store.create_environment(env, [entry])
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

    def resolve(
        self,
        ref: str | Environment | None,
        actor: Actor,
        need: Role = Role.READER,
        scope: Scope | None = None,
        *,
        shared: bool = True,
    ) -> Environment:
        """An environment by id or by name (the actor's own first, else one shared with them;
        ``owner/name`` picks among shared ones of one name); ``None`` means the default.
        ``need`` is the role the caller's action requires, ``scope`` the key scope (default:
        the one ``need`` implies). With no ``ref``, the actor's project (created on first use
        when the actor may write) comes first. An ``Environment`` already read in this call is
        checked, not read again.

        A bare name reaches another user's environment for reading only: to write to it, name
        it ``owner/name`` or by its id (a typo, or a name the actor has not created yet, must
        not send their writes to whoever shared an environment of that name). ``shared``
        False: the actor's own environments only (a caller that creates its own when the
        name is not found)."""
        if isinstance(ref, Environment):
            env, role = ref, self.role_of(ref, actor)
        else:
            env, role = self._lookup(ref, actor, shared=shared)
        self.check(env, role, need, actor, scope)  # a reader hears that they are one first
        bare = not isinstance(ref, Environment) and is_bare(ref)
        if bare and need is not Role.READER and env.owner != actor.user_id:
            raise InvalidInput(
                f"environment {ref!r} is {self._owner_name(env)}'s, shared with you: to write "
                f"to it, name it '{self.label(env, actor)}' or {env.id}",
                environment=ref,
            )
        return env

    def project_to_create(self, ref: str | None, actor: Actor) -> str | None:
        """The name of the project environment that :meth:`resolve` of ``ref`` would create
        on first use (None: ``ref`` names an environment, or the project's exists), so that a
        preview can say so without creating it."""
        project = actor.project
        if ref or not project or not is_bare(project) or not actor.can(Scope.WRITE):
            return None
        try:
            self._find(project, actor, shared=False)
        except NotFound:
            return project
        return None

    def _lookup(
        self, ref: str | None, actor: Actor, *, shared: bool = True
    ) -> tuple[Environment, Role | None]:
        """The environment ``ref`` names for the actor and their role in it, kept per process
        while the store's environment stamp (moved by every change to an environment or its
        members, by any process) stays where it was when they were read."""
        key = (ref or "", actor.user_id, "" if ref else actor.project, shared)
        stamp = self._store.environment_stamp()
        if stamp is not None:
            kept = self._kept.get(key)
            if kept is not None and kept[0] == stamp:
                return kept[1], kept[2]
        env = (
            self._find(ref, actor, shared=shared)
            if ref or not actor.project
            else self._project(actor)
        )
        role = self.role_of(env, actor)
        if stamp is not None:  # read before the lookup: a change meanwhile is seen next time
            if len(self._kept) >= KEPT_LOOKUPS:
                self._kept.clear()
            self._kept[key] = (stamp, env, role)
        return env, role

    def _project(self, actor: Actor) -> Environment:
        """The environment of the project the actor works in, created on first use."""
        ref = actor.project or ""
        if not is_bare(ref):  # an id, or owner/name (a team's project): that one, never made
            return self._find(ref, actor)
        try:
            return self._find(ref, actor, shared=False)
        except NotFound:
            if not actor.can(Scope.WRITE):
                raise
        try:
            return self.create(ref, actor, f"The project {ref}")
        except Conflict:  # created concurrently by another process
            return self._find(ref, actor, shared=False)

    def _find(self, ref: str | None, actor: Actor, *, shared: bool = True) -> Environment:
        """The environment ``ref`` names: an id; a name of the actor's own; else (``shared``)
        the one of that name shared with them, or ``owner/name`` (the owner's user name or
        id) when several are. A project names only the actor's own (``shared=False``)."""
        if ref is None or ref == "":
            return self.ensure_default(actor)
        if ref.startswith("env_"):
            # an id is never read as a name: a user's environment named like another's id
            # must not stand in for it
            env = self._store.get_environment(ref)
            if env is None or self.role_of(env, actor) is None:
                raise NotFound(f"environment {ref!r} does not exist", environment=ref)
            return env
        text = ref.strip().lower()
        owner, _, name = text.rpartition("/") if shared else ("", "", text)
        if not owner:
            env = self._store.find_environment(actor.user_id, name)
            if env is not None:
                return env
            if name == DEFAULT_ENVIRONMENT:
                return self.ensure_default(actor)
        if shared:
            found = [
                e
                for e in self._visible_named(name, actor)
                if not owner or owner in self._owner_refs(e)
            ]
            if len(found) == 1:
                return found[0]
            if found:
                raise InvalidInput(self._ambiguous(name, found), environment=ref)
        raise NotFound(f"environment {ref!r} does not exist", environment=ref)

    def _visible_named(self, name: str, actor: Actor) -> builtins.list[Environment]:
        """The actor's own environment named ``name`` and those of that name shared with them."""
        own = self._store.find_environment(actor.user_id, name)
        shared = [
            env
            for m in self._store.accounts.memberships(actor.user_id)
            if (env := self._store.get_environment(m.environment_id)) is not None
            and env.name == name
        ]
        return ([own] if own is not None else []) + shared

    def shadowed(self, env_id: str, actor: Actor) -> builtins.list[str]:
        """The environments shared with ``actor`` under the name of their own ``env_id``, as
        ``owner/name`` (a teammate's project this one may have been meant to be)."""
        env = self._store.get_environment(env_id)
        if env is None or env.owner != actor.user_id:
            return []
        return [self.label(e, actor) for e in self._visible_named(env.name, actor) if e != env]

    def _user(self, ref: str) -> str:
        """The id of the user ``ref`` names (their id or login name); NotFound if none."""
        user = self._named_user(ref)
        if user is None:
            raise NotFound(f"user {ref!r} does not exist", user_id=ref)
        return user.id

    def _named_user(self, ref: str) -> User | None:
        accounts = self._store.accounts
        return accounts.get_user(ref) or accounts.find_user(ref)

    def label(self, env: Environment, actor: Actor) -> str:
        """How ``actor`` names ``env`` to write to it: its name when it is theirs, else
        ``owner/name``."""
        return env.name if env.owner == actor.user_id else f"{self._owner_name(env)}/{env.name}"

    def _owner_name(self, env: Environment) -> str:
        user = self._store.accounts.get_user(env.owner)
        return env.owner if user is None else user.name

    def _owner_refs(self, env: Environment) -> set[str]:
        """How ``owner/name`` may name the owner of ``env``: their id or their user name."""
        return {env.owner.lower(), self._owner_name(env).lower()}

    def _ambiguous(self, name: str, found: builtins.list[Environment]) -> str:
        choices = ", ".join(f"{self._owner_name(e)}/{name} ({e.id})" for e in found)
        return (
            f"{len(found)} environments named {name!r} are shared with you; "
            f"name one as owner/name or by its id: {choices}"
        )

    def list(self, actor: Actor) -> list[Environment]:
        """The actor's own environments, then those shared with them."""
        require_scope(actor, Scope.READ)
        if actor.can(Scope.WRITE):
            self.ensure_default(actor)
        own = self._store.list_environments(actor.user_id)
        shared = [
            env
            for m in self._store.accounts.memberships(actor.user_id)
            if (env := self._store.get_environment(m.environment_id)) is not None
        ]
        return own + shared

    def delete(self, ref: str, actor: Actor, *, purge: bool = False) -> Environment:
        """Delete an environment. One that still holds memories (deleted ones included) is
        refused unless ``purge`` is set, which removes them for good."""
        env = self.resolve(ref, actor, Role.OWNER)
        held = self._store.count(MemoryFilter(environment_ids=[env.id], statuses=list(Status)))
        if held and not purge:
            raise Conflict(
                f"environment {env.name!r} holds {held} memories; delete with purge to remove "
                "them for good",
                environment=env.name,
                memories=held,
            )
        entry = self.audit.entry(
            actor, "environment.delete", environment_id=env.id, targets=[env.id], purged=held
        )
        self._store.delete_environment(env.id, [entry])
        return env

    # -- members -----------------------------------------------------------------------------
    def members(self, ref: str, actor: Actor) -> builtins.list[Member]:
        """Everyone with access, the owner first."""
        env = self.resolve(ref, actor)
        owner = Member(
            environment_id=env.id, user_id=env.owner, role=Role.OWNER, added_at=env.created_at
        )
        return [owner, *self._store.accounts.list_members(env.id)]

    def share(self, ref: str, user_id: str, role: Role, actor: Actor) -> Member:
        """Give ``user_id`` (a user's id or name) a role in the environment (owners only), or
        change it."""
        env = self.resolve(ref, actor, Role.OWNER)
        user_id = self._user(user_id)
        if user_id == env.owner:
            raise InvalidInput("the environment's owner is always its owner", user_id=user_id)
        old = self._store.accounts.get_member(env.id, user_id)
        member = Member(
            environment_id=env.id,
            user_id=user_id,
            role=role,
            added_at=old.added_at if old else self._clock(),
            added_by=actor.user_id,
        )
        entry = self.audit.entry(
            actor,
            "environment.share",
            environment_id=env.id,
            targets=[env.id, user_id],
            role=role.value,
            previous_role=old.role.value if old else None,
        )
        self._store.accounts.put_member(member, [entry])
        return member

    def unshare(self, ref: str, user_id: str, actor: Actor) -> Member:
        """Remove a member (``user_id``: their id or name; owners only; anyone may leave an
        environment shared with them)."""
        typed = user_id
        user = self._named_user(typed)
        user_id = typed if user is None else user.id
        # the role first: a caller who may not manage members learns nothing of users
        env = self.resolve(ref, actor, Role.READER if user_id == actor.user_id else Role.OWNER)
        if user is None and user_id != actor.user_id:
            raise NotFound(f"user {typed!r} does not exist", user_id=typed)
        if user_id == env.owner:
            raise InvalidInput(
                f"{typed!r} owns {env.name!r}: an owner cannot be removed (delete the "
                "environment instead)",
                user_id=user_id,
            )
        member = self._store.accounts.get_member(env.id, user_id)
        if member is None:
            raise NotFound(f"user {typed!r} is not a member of {env.name!r}", user_id=user_id)
        entry = self.audit.entry(
            actor, "environment.unshare", environment_id=env.id, targets=[env.id, user_id]
        )
        self._store.accounts.remove_member(env.id, user_id, [entry])
        return member


def validation_message(exc: ValidationError) -> str:
    """One line naming each invalid field."""
    return "; ".join(validation_lines(exc.errors()))


def is_bare(ref: str | None) -> bool:
    """Whether ``ref`` is a bare environment name: neither an id nor ``owner/name`` (an empty
    owner, as in ``/webapp``, names no one)."""
    if not ref or ref.startswith("env_"):
        return False
    owner, slash, _ = ref.partition("/")
    return not (slash and owner.strip())
