"""Accounts and API keys: users, keys with scopes (stored as HMAC digests), optional passwords.

A token is ``egm_`` followed by 43 random URL-safe characters. It is shown once; the store keeps
only ``HMAC-SHA256(server secret, token)``, and the server secret lives in an owner-only file in
the data directory, not in the database, so a copy of the database alone cannot forge a key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from pathlib import Path

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from engram.accounts import (
    ALL_SCOPES,
    KEY_PREFIX,
    USER_ID_PREFIX,
    ApiKey,
    IssuedKey,
    Scope,
    User,
)
from engram.actors import LOCAL, LOCAL_USER, Actor
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied, Unauthenticated
from engram.ids import new_id
from engram.limits import SPACE
from engram.private_files import write_private
from engram.service.audit import AuditLog
from engram.store import Store

SECRET_FILE = "server_secret"
TOKEN_FILE = "token"
MIN_PASSWORD = 8
TOUCH_EVERY_SECONDS = 60.0
"""``last_used_at`` is written at most this often per key, so reads stay reads."""


def load_secret(home: Path) -> bytes:
    """The server secret in ``<home>/server_secret``, created on first use."""
    path = home / SECRET_FILE
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        write_private(path, secrets.token_hex(32))
        return bytes.fromhex(path.read_text().strip())


def _check_name(name: str, what: str) -> str:
    name = name.strip(SPACE)
    if not 1 <= len(name) <= 64 or any(c in SPACE for c in name):
        raise InvalidInput(f"{what} must be 1-64 characters without spaces", field="name")
    return name


def _no_wider(scopes: Iterable[Scope], actor: Actor) -> None:
    """No path yields a key with a scope its caller lacks."""
    missing = set(scopes) - set(actor.scopes)
    if missing:
        raise PermissionDenied(
            "a key cannot grant scopes its creator lacks",
            scopes=sorted(s.value for s in missing),
        )


class AccountService:
    def __init__(self, store: Store, clock: Clock, audit: AuditLog, secret: bytes) -> None:
        self._store = store
        self._accounts = store.accounts
        self._clock = clock
        self._audit = audit
        self._secret = secret
        self._hasher = PasswordHasher()  # Argon2id with the library's recommended parameters

    # -- helpers -----------------------------------------------------------------------------
    def digest(self, token: str) -> str:
        return hmac.new(self._secret, token.encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def _require(actor: Actor, scope: Scope) -> None:
        if not actor.can(scope):
            raise PermissionDenied(f"this needs the {scope.value!r} scope", scope=scope.value)

    def _own_or_admin(self, actor: Actor, user_id: str) -> None:
        if user_id != actor.user_id and not actor.can(Scope.ADMIN):
            raise NotFound(f"user {user_id!r} does not exist", user_id=user_id)

    # -- users -------------------------------------------------------------------------------
    def create_user(
        self, name: str, actor: Actor, *, password: str | None = None, is_admin: bool = False
    ) -> User:
        """Create an account (admins only)."""
        self._require(actor, Scope.ADMIN)
        return self._create_user(new_id(USER_ID_PREFIX), name, actor, password, is_admin)

    def _create_user(
        self, user_id: str, name: str, actor: Actor, password: str | None, is_admin: bool
    ) -> User:
        name = _check_name(name, "a user name")
        user = User(
            id=user_id,
            name=name,
            created_at=self._clock(),
            is_admin=is_admin,
            has_password=password is not None,
        )
        hashed = None if password is None else self._hash(password)
        entry = self._audit.entry(actor, "user.create", targets=[user.id], name=name)
        self._accounts.create_user(user, hashed, [entry])
        return user

    def ensure_owner(self, name: str) -> tuple[User, bool]:
        """The owner account (id ``local``, the same user the local CLI acts as), created on
        first call. Returns the user and whether it was created now."""
        user = self._accounts.get_user(LOCAL_USER)
        if user is not None:
            return user, False
        system = Actor(LOCAL_USER, "local")
        try:
            return self._create_user(LOCAL_USER, name, system, None, True), True
        except Conflict:
            return self._create_user(LOCAL_USER, LOCAL_USER, system, None, True), True

    def bootstrap_owner(
        self, name: str, token_file: Path, *, rotate: bool = False
    ) -> IssuedKey | None:
        """Make sure the owner account exists (named ``name`` when it is created) and
        ``token_file`` (mode 0600) holds a working key of theirs with every scope; ``rotate``
        replaces a working one. Returns the key issued now, or None when the file already
        held a working key (and ``rotate`` is false)."""
        self.ensure_owner(name)
        old = token_file.read_text().strip() if token_file.exists() else ""
        current = None
        if old:
            try:
                current = self.authenticate(old, "local")
            except Unauthenticated:
                current = None
        if current is not None and not rotate:
            return None
        if current is not None and current.key_id is not None:
            issued = self.rotate_key(current.key_id, LOCAL)
        else:
            issued = self.issue_key(LOCAL, "cli", [Scope.READ, Scope.WRITE, Scope.ADMIN])
        write_private(token_file, issued.token + "\n")
        return issued

    def get_user(self, user_id: str, actor: Actor) -> User:
        self._own_or_admin(actor, user_id)
        user = self._accounts.get_user(user_id)
        if user is None:
            raise NotFound(f"user {user_id!r} does not exist", user_id=user_id)
        return user

    def find_user(self, name_or_id: str, actor: Actor) -> User:
        """The user with this id or, failing that, this name. An admin finds anyone; others
        find only themselves (anyone else is :class:`NotFound`, as a missing user is)."""
        user = self._accounts.get_user(name_or_id) or self._accounts.find_user(name_or_id)
        if user is None or (user.id != actor.user_id and not actor.can(Scope.ADMIN)):
            raise NotFound(f"user {name_or_id!r} does not exist", user=name_or_id)
        return user

    def list_users(self, actor: Actor) -> list[User]:
        if actor.can(Scope.ADMIN):
            return self._accounts.list_users()
        user = self._accounts.get_user(actor.user_id)
        return [] if user is None else [user]

    def names(self, user_ids: Iterable[str]) -> dict[str, str]:
        """The login name of each of these users (the members, owners and addressees a page
        shows beside their ids); an id that is no longer a user's is left out."""
        found = {i: self._accounts.get_user(i) for i in set(user_ids)}
        return {i: u.name for i, u in found.items() if u is not None}

    def user_exists(self, user_id: str) -> bool:
        return self._accounts.get_user(user_id) is not None

    # -- passwords ---------------------------------------------------------------------------
    def _hash(self, password: str) -> str:
        if not MIN_PASSWORD <= len(password) <= 1024:
            raise InvalidInput(
                f"a password must be {MIN_PASSWORD}-1024 characters", field="password"
            )
        return self._hasher.hash(password)

    def set_password(self, user_id: str, password: str, actor: Actor) -> User:
        self._require(actor, Scope.WRITE)
        user = self.get_user(user_id, actor)
        entry = self._audit.entry(actor, "user.password", targets=[user_id])
        self._accounts.set_password_hash(user_id, self._hash(password), [entry])
        return user.model_copy(update={"has_password": True})

    def verify_password(self, name: str, password: str) -> User:
        """The user whose name and password these are; :class:`Unauthenticated` otherwise."""
        user = self._accounts.find_user(name)
        stored = None if user is None else self._accounts.password_hash(user.id)
        try:
            if user is None or stored is None:
                raise VerificationError("no such user or no password")
            self._hasher.verify(stored, password)
        except (VerificationError, InvalidHashError) as exc:
            raise Unauthenticated("wrong user name or password") from exc
        return user

    # -- keys --------------------------------------------------------------------------------
    def issue_key(
        self,
        actor: Actor,
        name: str = "default",
        scopes: Iterable[Scope] = (Scope.READ, Scope.WRITE),
        *,
        user_id: str | None = None,
    ) -> IssuedKey:
        """A new key for ``user_id`` (default: the actor). Creating keys needs the admin scope,
        and a key never holds a scope its creator lacks."""
        owner = user_id or actor.user_id
        wanted = sorted({Scope(s) for s in scopes})
        if not wanted:
            raise InvalidInput("a key needs at least one scope", field="scopes")
        self._require(actor, Scope.ADMIN)
        _no_wider(wanted, actor)
        user = self.get_user(owner, actor)
        if Scope.ADMIN in wanted and not user.is_admin:
            raise InvalidInput(f"user {user.name!r} is not an administrator", field="scopes")
        return self._issue(actor, user.id, _check_name(name, "a key name"), wanted, None)

    def _issue(
        self, actor: Actor, user_id: str, name: str, scopes: list[Scope], replaces: str | None
    ) -> IssuedKey:
        token = KEY_PREFIX + secrets.token_urlsafe(32)
        key = ApiKey(
            id=new_id("key_"),
            user_id=user_id,
            name=name,
            prefix=token[:10],
            scopes=scopes,
            created_at=self._clock(),
        )
        action = "key.create" if replaces is None else "key.rotate"
        entry = self._audit.entry(
            actor,
            action,
            targets=[key.id] if replaces is None else [replaces, key.id],
            before={} if replaces is None else {replaces: 1},
            after={key.id: 1} if replaces is None else {replaces: None, key.id: 1},
            user=user_id,
            scopes=[s.value for s in scopes],
        )
        self._accounts.create_key(key, self.digest(token), [entry], replaces=replaces)
        return IssuedKey(key=key, token=token)

    def _load_key(self, key_id: str, actor: Actor) -> ApiKey:
        """A key the actor may manage: the one they authenticated with, or (admin scope) any
        of their user's keys, or anyone's for an administrator. Another user's key does not
        exist for them; another key of their own needs the admin scope."""
        key = self._accounts.get_key(key_id)
        if key is None or (key.user_id != actor.user_id and not actor.can(Scope.ADMIN)):
            raise NotFound(f"key {key_id!r} does not exist", key_id=key_id)
        if key.id != actor.key_id:
            self._require(actor, Scope.ADMIN)
        return key

    def get_key(self, key_id: str, actor: Actor) -> ApiKey:
        return self._load_key(key_id, actor)

    def list_keys(self, actor: Actor, user_id: str | None = None) -> list[ApiKey]:
        """The actor's keys (without the admin scope: only the key they act with); admins may
        name another user, or ``*`` for everyone's."""
        if user_id == "*":
            self._require(actor, Scope.ADMIN)
            return self._accounts.list_keys()
        owner = user_id or actor.user_id
        self._own_or_admin(actor, owner)
        keys = self._accounts.list_keys(owner)
        return keys if actor.can(Scope.ADMIN) else [k for k in keys if k.id == actor.key_id]

    def rotate_key(self, key_id: str, actor: Actor) -> IssuedKey:
        """A new token with the same name and scopes; the old one stops working at once. The
        actor's own key, or any with the admin scope; never scopes the actor lacks."""
        key = self._load_key(key_id, actor)
        if key.revoked_at is not None:
            raise Conflict(f"key {key_id!r} is revoked", key_id=key_id)
        _no_wider(key.scopes, actor)
        return self._issue(actor, key.user_id, key.name, list(key.scopes), key.id)

    def revoke_key(self, key_id: str, actor: Actor) -> ApiKey:
        """Stop a key working at once (it stays listed, marked revoked): the actor's own key,
        or any with the admin scope."""
        key = self._load_key(key_id, actor)
        if key.revoked_at is not None:
            return key
        at = self._clock()
        entry = self._audit.entry(
            actor, "key.revoke", targets=[key.id], before={key.id: 1}, after={key.id: None}
        )
        self._accounts.revoke_key(key.id, at, [entry])
        return key.model_copy(update={"revoked_at": at})

    # -- authentication ----------------------------------------------------------------------
    def authenticate(self, token: str, interface: str = "api") -> Actor:
        """The actor a token stands for; :class:`Unauthenticated` for an unknown, malformed or
        revoked token."""
        if not token.startswith(KEY_PREFIX) or len(token) > 200:
            raise Unauthenticated("invalid API key")
        key = self._accounts.key_by_digest(self.digest(token))
        if key is None or key.revoked_at is not None:
            raise Unauthenticated("invalid or revoked API key")
        now = self._clock()
        last = key.last_used_at
        if last is None or (now - last).total_seconds() >= TOUCH_EVERY_SECONDS:
            self._accounts.touch_key(key.id, now)
        scopes = frozenset(key.scopes)
        if Scope.ADMIN in scopes:
            scopes = ALL_SCOPES
        return Actor(key.user_id, interface, key.id, scopes)
