"""The API described once, without I/O: each method returns a :class:`Call` (request + how to
read the answer). :class:`engram.sdk.Client` and :class:`engram.sdk.AsyncClient` only send them."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, TypeAdapter

from engram.accounts import (
    ApiKey,
    AuditEntry,
    AuditQuery,
    Grant,
    IssuedKey,
    Member,
    Role,
    Scope,
    User,
)
from engram.erasure import Erased
from engram.errors import (
    Conflict,
    EngramError,
    InvalidInput,
    MissingDependency,
    NotFound,
    PermissionDenied,
    StorageError,
    Unauthenticated,
)
from engram.lifecycle.report import StoredMemory
from engram.models import (
    Environment,
    Layer,
    Memory,
    MemoryFilter,
    MemoryPatch,
    MemoryVersion,
    NewMemory,
    Page,
)

T = TypeVar("T")

ERRORS: dict[str, type[EngramError]] = {
    cls.code: cls
    for cls in (
        InvalidInput,
        NotFound,
        Conflict,
        PermissionDenied,
        Unauthenticated,
        MissingDependency,
        StorageError,
    )
}


def seg(value: str) -> str:
    """``value`` as one segment of a request's path: escaped (``?``, ``#``, ``%``, spaces,
    ``.`` and ``..`` reach the server as the characters they are), and never a ``/``, which
    the server would read as a path of its own (a bare ``Not Found``)."""
    if "/" in value:
        raise InvalidInput(
            f"{value!r} cannot name something in a URL path (it holds '/'): use its id",
            value=value,
        )
    if value in (".", ".."):  # a dot segment would be resolved away: '/members/..' is its parent
        return value.replace(".", "%2E")
    return quote(value, safe="")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    result: type[T] | Any
    params: dict[str, Any] = field(default_factory=dict)
    body: Any = None
    field: str | None = None
    """Read only this field of the answer."""
    content: bytes | None = None
    """A raw body (an uploaded file), sent instead of ``body`` as JSON."""

    def parse(self, data: Any) -> T:
        if self.field is not None:
            data = data[self.field]
        out: T = TypeAdapter(self.result).validate_python(data)
        return out


def error_from(status: int, data: Any) -> EngramError:
    """The domain exception a canonical error body stands for."""
    err = data.get("error") if isinstance(data, dict) else None
    if not isinstance(err, dict):
        return EngramError(f"HTTP {status}: {data!r}"[:500], status=status)
    cls = ERRORS.get(str(err.get("code")), EngramError)
    raw = err.get("details")
    details: dict[str, Any] = raw if isinstance(raw, dict) else {}
    exc = cls(str(err.get("message", "")), **details)
    exc.details["status"] = status
    return exc


def _json(model: BaseModel) -> Any:
    return model.model_dump(mode="json", exclude_unset=True)


def _params(**kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in kw.items():
        if value is None or value == []:
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else value
    return out


class LayerCalls:
    """Facts, episodes or procedures."""

    def __init__(self, layer: Layer) -> None:
        self.layer = layer
        self.base = f"/api/v1/{layer.value}s"

    def add(self, new: NewMemory, environment: str | None = None) -> Call[StoredMemory]:
        """Through dedup and contradiction unless ``new.lifecycle`` is false; the answer's
        ``outcome`` says what happened (created, merged, superseded, queued)."""
        body = new.model_dump(mode="json", exclude_none=True)
        return Call("POST", self.base, StoredMemory, _params(environment=environment), body)

    def add_many(
        self, items: Sequence[NewMemory], environment: str | None = None
    ) -> Call[builtins.list[StoredMemory]]:
        body = [n.model_dump(mode="json", exclude_none=True) for n in items]
        return Call(
            "POST",
            self.base + "/bulk",
            builtins.list[StoredMemory],
            _params(environment=environment),
            body,
        )

    def get(self, memory_id: str) -> Call[Memory]:
        return Call("GET", f"{self.base}/{seg(memory_id)}", Memory)

    def list(
        self,
        flt: MemoryFilter | None = None,
        *,
        environment: str | None = None,
        limit: int = 50,
        offset: int = 0,
        order: str = "-updated_at",
    ) -> Call[Page]:
        if isinstance(flt, str):  # context and search take the environment first; a list not
            raise InvalidInput(
                f"list(flt, *, environment=…): the first argument is a MemoryFilter; for the "
                f"environment {flt!r} call list(environment={flt!r})",
                field="flt",
            )
        f = flt or MemoryFilter()
        params = _params(
            environment=environment,
            category=f.categories,
            tag=f.tags,
            thread=f.threads,
            status=[s.value for s in f.statuses],
            created_after=f.created_after,
            created_before=f.created_before,
            updated_after=f.updated_after,
            updated_before=f.updated_before,
            min_importance=f.min_importance,
            max_importance=f.max_importance,
            limit=limit,
            offset=offset,
            order=order,
        )
        return Call("GET", self.base, Page, params)

    def update(self, memory_id: str, patch: MemoryPatch, reason: str = "") -> Call[Memory]:
        return Call(
            "PATCH", f"{self.base}/{seg(memory_id)}", Memory, _params(reason=reason), _json(patch)
        )

    def update_many(
        self, patches: Sequence[tuple[str, MemoryPatch]], reason: str = ""
    ) -> Call[builtins.list[Memory]]:
        items = [{"id": i, "patch": _json(p)} for i, p in patches]
        return Call(
            "PATCH",
            self.base + "/bulk",
            builtins.list[Memory],
            {},
            {"items": items, "reason": reason},
        )

    def delete(self, memory_id: str, reason: str = "") -> Call[Memory]:
        return Call("DELETE", f"{self.base}/{seg(memory_id)}", Memory, _params(reason=reason))

    def delete_many(self, ids: Sequence[str], reason: str = "") -> Call[builtins.list[Memory]]:
        body = {"ids": list(ids), "reason": reason}
        return Call("POST", self.base + "/bulk-delete", builtins.list[Memory], {}, body)

    def history(self, memory_id: str) -> Call[builtins.list[MemoryVersion]]:
        return Call("GET", f"{self.base}/{seg(memory_id)}/history", builtins.list[MemoryVersion])

    def restore(self, memory_id: str, version: int | None = None, reason: str = "") -> Call[Memory]:
        body = {"version": version, "reason": reason}
        return Call("POST", f"{self.base}/{seg(memory_id)}/restore", Memory, {}, body)

    def purge(self, ids: Sequence[str]) -> Call[int]:
        body = {"ids": list(ids)}
        return Call("POST", self.base + "/purge", int, {}, body, field="purged")

    def outcome(self, memory_id: str, *, success: bool, note: str = "") -> Call[Memory]:
        which = "success" if success else "failure"
        return Call("POST", f"{self.base}/{seg(memory_id)}/{which}", Memory, {}, {"note": note})


class EnvironmentCalls:
    base = "/api/v1/environments"

    def list(self) -> Call[builtins.list[Environment]]:
        return Call("GET", self.base, builtins.list[Environment])

    def create(self, name: str, description: str = "") -> Call[Environment]:
        body = {"name": name, "description": description}
        return Call("POST", self.base, Environment, {}, body)

    def get(self, ref: str) -> Call[Environment]:
        return Call("GET", f"{self.base}/{seg(ref)}", Environment)

    def delete(self, ref: str, *, purge: bool = False) -> Call[Environment]:
        return Call("DELETE", f"{self.base}/{seg(ref)}", Environment, {"purge": purge})

    def members(self, ref: str) -> Call[builtins.list[Member]]:
        return Call("GET", f"{self.base}/{seg(ref)}/members", builtins.list[Member])

    def share(self, ref: str, user_id: str, role: Role = Role.READER) -> Call[Member]:
        body = {"role": Role(role).value}
        return Call("PUT", f"{self.base}/{seg(ref)}/members/{seg(user_id)}", Member, {}, body)

    def unshare(self, ref: str, user_id: str) -> Call[Member]:
        return Call("DELETE", f"{self.base}/{seg(ref)}/members/{seg(user_id)}", Member)


class AccountCalls:
    def me(self) -> Call[User]:
        return Call("GET", "/api/v1/users/me", User)

    def users(self) -> Call[builtins.list[User]]:
        return Call("GET", "/api/v1/users", list[User])

    def delete_user(self, user_id: str, *, purge: bool = False) -> Call[Erased]:
        """Delete an account (admins); ``purge``: with everything that is theirs."""
        return Call("DELETE", f"/api/v1/users/{seg(user_id)}", Erased, {"purge": purge})

    def create_user(
        self, name: str, *, password: str | None = None, is_admin: bool = False
    ) -> Call[User]:
        body = {"name": name, "password": password, "is_admin": is_admin}
        return Call("POST", "/api/v1/users", User, {}, body)

    def user(self, user_id: str) -> Call[User]:
        return Call("GET", f"/api/v1/users/{seg(user_id)}", User)

    def set_password(self, user_id: str, password: str) -> Call[User]:
        body = {"password": password}
        return Call("PUT", f"/api/v1/users/{seg(user_id)}/password", User, {}, body)

    def keys(self, user_id: str | None = None) -> Call[builtins.list[ApiKey]]:
        return Call("GET", "/api/v1/keys", list[ApiKey], _params(user_id=user_id))

    def create_key(
        self,
        name: str = "default",
        scopes: Sequence[Scope] = (Scope.READ, Scope.WRITE),
        *,
        user_id: str | None = None,
    ) -> Call[IssuedKey]:
        body = {"name": name, "scopes": [Scope(s).value for s in scopes], "user_id": user_id}
        return Call("POST", "/api/v1/keys", IssuedKey, {}, body)

    def key(self, key_id: str) -> Call[ApiKey]:
        return Call("GET", f"/api/v1/keys/{seg(key_id)}", ApiKey)

    def rotate_key(self, key_id: str) -> Call[IssuedKey]:
        return Call("POST", f"/api/v1/keys/{seg(key_id)}/rotate", IssuedKey)

    def revoke_key(self, key_id: str) -> Call[ApiKey]:
        return Call("DELETE", f"/api/v1/keys/{seg(key_id)}", ApiKey)

    def providers(self) -> Call[builtins.list[dict[str, Any]]]:
        """The configured LLM providers (admin scope; never their keys)."""
        return Call("GET", "/api/v1/providers", list[dict[str, Any]])

    def set_provider(
        self,
        name: str,
        model: str,
        *,
        kind: str = "openai",
        base_url: str = "",
        api_key: str | None = None,
        timeout: float = 60.0,
    ) -> Call[dict[str, Any]]:
        """Configure or replace an LLM provider (admin scope; the key is never shown again)."""
        body = {
            "kind": kind,
            "model": model,
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout,
        }
        return Call("PUT", f"/api/v1/providers/{seg(name)}", dict[str, Any], {}, body)

    def remove_provider(self, name: str) -> Call[dict[str, Any]]:
        return Call("DELETE", f"/api/v1/providers/{seg(name)}", dict[str, Any])

    def grants(self, user_id: str | None = None) -> Call[builtins.list[Grant]]:
        """OAuth grants: the remote MCP clients signed in as you."""
        return Call("GET", "/api/v1/oauth/grants", list[Grant], _params(user_id=user_id))

    def grant(self, grant_id: str) -> Call[Grant]:
        return Call("GET", f"/api/v1/oauth/grants/{seg(grant_id)}", Grant)

    def revoke_grant(self, grant_id: str) -> Call[Grant]:
        """Revoke an OAuth grant: its tokens stop working at once."""
        return Call("DELETE", f"/api/v1/oauth/grants/{seg(grant_id)}", Grant)

    def audit(self, q: AuditQuery | None = None) -> Call[builtins.list[AuditEntry]]:
        params = _params(**(q or AuditQuery()).model_dump())
        return Call("GET", "/api/v1/audit", list[AuditEntry], params)
