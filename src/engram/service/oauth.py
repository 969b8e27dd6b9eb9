"""Engram as the OAuth 2.1 authorization server of its own ``/mcp`` (remote MCP clients such as
Claude.ai and ChatGPT sign in here instead of pasting a key).

A *grant* is one user's consent, given on the sign-in page with their password, to one client
for some of the scopes ``read`` and ``write`` on one resource (the /mcp URL). It yields a
one-time authorization code (PKCE S256, checked by the HTTP edge), then short-lived access
tokens and refresh tokens that rotate on every use. Revoking the grant stops all of them at
once. A reused code or a replayed refresh token revokes the grant (RFC 9700 §2.2.2, §4.14).

Codes and tokens are stored as HMAC digests, like API keys; the grant's audit entries hold ids
only.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from engram.accounts import Grant, Scope
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import InvalidInput, NotFound, PermissionDenied, Saturated, Unauthenticated
from engram.ids import new_id
from engram.service.accounts import AccountService
from engram.service.audit import AuditLog
from engram.service.sign_ins import SignInService
from engram.store import Store
from engram.store.oauth import ClientRecord, CodeRecord, GrantRecord, TokenKind, TokenRecord

ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
CODE_TTL = timedelta(minutes=5)
REQUEST_TTL = timedelta(minutes=15)
"""How long a sign-in page stays valid after the client sent the user to it."""
UNCLAIMED_CLIENTS = 500
"""At most this many registered clients may wait for their first grant; past that,
registration answers 429 until some are claimed or removed."""
UNCLAIMED_TTL = timedelta(hours=24)
"""A client no user has consented to this long after it registered is removed (at the next
registration)."""

OAUTH_SCOPES: tuple[str, ...] = (Scope.READ.value, Scope.WRITE.value)
"""What a client may ask for (never ``admin``: keys for that come from ``engram keys``)."""

ACCESS_PREFIX = "ega_"
REFRESH_PREFIX = "egr_"
CODE_PREFIX = "egc_"
GRANT_PREFIX = "grt_"
INTERFACE = "oauth"


def _grant(record: GrantRecord) -> Grant:
    return Grant(
        id=record.id,
        user_id=record.user_id,
        client_id=record.client_id,
        client_name=record.client_name,
        scopes=list(record.scopes),
        resource=record.resource,
        created_at=record.created_at,
        revoked_at=record.revoked_at,
    )


@dataclass(frozen=True)
class PendingAuthorization:
    """A checked authorization request waiting for the user's sign-in and consent; carried by
    the sign-in page, sealed (:meth:`OAuthService.seal`) so it cannot be altered."""

    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: tuple[str, ...]
    resource: str
    expires_at: float


@dataclass(frozen=True)
class Issued:
    access_token: str
    refresh_token: str
    expires_in: int
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class CodeGrant:
    """A stored authorization code with the grant it belongs to."""

    code: CodeRecord
    grant: GrantRecord


@dataclass(frozen=True)
class RefreshGrant:
    token: TokenRecord
    grant: GrantRecord


def canonical(url: str) -> str:
    return url.rstrip("/")


class OAuthService:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        audit: AuditLog,
        accounts: AccountService,
        sign_ins: SignInService,
    ) -> None:
        self._store = store.oauth
        self._registry = store.oauth_registry
        self._clock = clock
        self._audit = audit
        self._accounts = accounts
        self._sign_ins = sign_ins

    # -- clients (RFC 7591) ------------------------------------------------------------------
    def register_client(self, client_id: str, metadata: dict[str, Any]) -> None:
        """Store a client's registration. Anyone may register, so the clients that no user
        has consented to yet are bounded: those older than :data:`UNCLAIMED_TTL` are removed,
        and past :data:`UNCLAIMED_CLIENTS` waiting ones this is :class:`Saturated` (nothing
        stored)."""
        now = self._clock()
        record = ClientRecord(client_id, json.dumps(metadata, sort_keys=True), now)
        if not self._registry.register(
            record, stale_before=now - UNCLAIMED_TTL, cap=UNCLAIMED_CLIENTS
        ):
            hours = int(UNCLAIMED_TTL.total_seconds() // 3600)
            raise Saturated(
                f"{UNCLAIMED_CLIENTS} registered OAuth clients are waiting for a first sign-in, "
                f"the most this server keeps; unused ones are removed after {hours} hours: "
                "try again later",
                retry_after=3600,
            )

    def client(self, client_id: str) -> dict[str, Any] | None:
        record = self._store.get_client(client_id)
        if record is None:
            return None
        data: dict[str, Any] = json.loads(record.metadata)
        return data

    # -- the sign-in page --------------------------------------------------------------------
    def pending(
        self,
        *,
        client_id: str,
        redirect_uri: str,
        redirect_uri_explicit: bool,
        code_challenge: str,
        state: str | None,
        scopes: Iterable[str],
        resource: str,
    ) -> PendingAuthorization:
        wanted = tuple(dict.fromkeys(scopes))
        if Scope.WRITE.value in wanted and Scope.READ.value not in wanted:
            wanted = (Scope.READ.value, *wanted)  # writing includes reading
        unknown = [s for s in wanted if s not in OAUTH_SCOPES]
        if unknown or not wanted:
            raise InvalidInput(
                f"scopes must be some of {' '.join(OAUTH_SCOPES)}, got {' '.join(wanted)!r}",
                field="scope",
            )
        expires = self._clock() + REQUEST_TTL
        return PendingAuthorization(
            client_id=client_id,
            redirect_uri=redirect_uri,
            redirect_uri_explicit=redirect_uri_explicit,
            code_challenge=code_challenge,
            state=state,
            scopes=wanted,
            resource=canonical(resource),
            expires_at=expires.timestamp(),
        )

    def seal(self, pending: PendingAuthorization) -> str:
        body = base64.urlsafe_b64encode(json.dumps(pending.__dict__).encode()).decode()
        return f"{body}.{self._accounts.digest('oauth-request:' + body)}"

    def unseal(self, sealed: str) -> PendingAuthorization:
        body, _, mac = sealed.partition(".")
        if not hmac.compare_digest(mac, self._accounts.digest("oauth-request:" + body)):
            raise InvalidInput("the sign-in request was altered or is not ours", field="request")
        pending = PendingAuthorization(**json.loads(base64.urlsafe_b64decode(body)))
        if pending.expires_at < self._clock().timestamp():
            raise InvalidInput(
                "the sign-in request expired: start again from the client", field="request"
            )
        return pending

    def approve(
        self,
        pending: PendingAuthorization,
        name: str,
        password: str,
        scopes: Iterable[str],
        address: str = "",
    ) -> tuple[str, Grant]:
        """Check the user's password (its failures count with the dashboard's, per name and
        client ``address``: :mod:`engram.service.sign_ins`) and record their consent (a grant,
        audited) to the client for ``scopes`` (some of those asked for); return the
        authorization code."""
        user = self._sign_ins.verify(name, password, address)
        chosen = tuple(s for s in pending.scopes if s in set(scopes))
        if not chosen:
            raise InvalidInput("choose at least one scope to allow", field="scope")
        client = self.client(pending.client_id)
        if client is None:
            raise NotFound(f"client {pending.client_id!r} is not registered")
        now = self._clock()
        grant = GrantRecord(
            id=new_id(GRANT_PREFIX),
            user_id=user.id,
            client_id=pending.client_id,
            client_name=str(client.get("client_name") or pending.client_id)[:200],
            scopes=chosen,
            resource=pending.resource,
            created_at=now,
        )
        code = CODE_PREFIX + secrets.token_urlsafe(32)
        record = CodeRecord(
            digest=self._accounts.digest(code),
            grant_id=grant.id,
            code_challenge=pending.code_challenge,
            redirect_uri=pending.redirect_uri,
            redirect_uri_explicit=pending.redirect_uri_explicit,
            expires_at=now + CODE_TTL,
        )
        actor = Actor(user.id, INTERFACE, None, frozenset(Scope(s) for s in chosen))
        entry = self._audit.entry(
            actor,
            "oauth.grant",
            targets=[grant.id],
            after={grant.id: 1},
            client_id=grant.client_id,
            scopes=list(chosen),
        )
        self._store.create_grant(grant, record, [entry])
        return code, _grant(grant)

    # -- the token endpoint ------------------------------------------------------------------
    def load_code(self, code: str, client_id: str) -> CodeGrant | None:
        """The unused code of a live grant of this client; a code used before revokes its
        grant (someone replayed it) and is None, like an unknown one."""
        record = self._store.get_code(self._accounts.digest(code))
        if record is None:
            return None
        grant = self._store.get_grant(record.grant_id)
        if grant is None or grant.client_id != client_id or grant.revoked_at is not None:
            return None
        if record.used_at is not None:
            self._revoke(grant, "code reused")
            return None
        return CodeGrant(record, grant)

    def redeem(self, found: CodeGrant) -> Issued:
        """Tokens for a checked code (its PKCE verifier and redirect URI matched); the code is
        spent in the same transaction, so a second redemption fails."""
        if found.code.expires_at <= self._clock():
            raise Unauthenticated("the authorization code has expired")
        issued, records = self._tokens(found.grant, found.grant.scopes)
        if not self._store.redeem_code(found.code.digest, self._clock(), records):
            self._revoke(found.grant, "code reused")
            raise Unauthenticated("the authorization code was already used")
        return issued

    def load_refresh(self, token: str, client_id: str) -> RefreshGrant | None:
        """The unused, unexpired refresh token of a live grant of this client; a rotated one
        presented again revokes its grant."""
        if not token.startswith(REFRESH_PREFIX):
            return None
        record = self._store.get_token(self._accounts.digest(token))
        if record is None or record.kind != "refresh":
            return None
        grant = self._store.get_grant(record.grant_id)
        if grant is None or grant.client_id != client_id or grant.revoked_at is not None:
            return None
        if record.used_at is not None:
            self._revoke(grant, "refresh token reused")
            return None
        if record.expires_at <= self._clock():
            return None
        return RefreshGrant(record, grant)

    def rotate(self, found: RefreshGrant, scopes: Iterable[str]) -> Issued:
        """New access and refresh tokens (``scopes``: the same or fewer); the refresh token
        presented stops working."""
        narrowed = tuple(s for s in found.token.scopes if s in set(scopes))
        if not narrowed:
            raise InvalidInput("a refreshed token needs at least one scope", field="scope")
        issued, records = self._tokens(found.grant, narrowed)
        if not self._store.rotate_refresh(found.token.digest, self._clock(), records):
            self._revoke(found.grant, "refresh token reused")
            raise Unauthenticated("the refresh token was already used")
        return issued

    def _tokens(
        self, grant: GrantRecord, scopes: tuple[str, ...]
    ) -> tuple[Issued, list[TokenRecord]]:
        now = self._clock()
        access = ACCESS_PREFIX + secrets.token_urlsafe(32)
        refresh = REFRESH_PREFIX + secrets.token_urlsafe(32)

        def record(token: str, kind: TokenKind, ttl: timedelta) -> TokenRecord:
            return TokenRecord(self._accounts.digest(token), grant.id, kind, scopes, now + ttl)

        records = [record(access, "access", ACCESS_TTL), record(refresh, "refresh", REFRESH_TTL)]
        issued = Issued(access, refresh, int(ACCESS_TTL.total_seconds()), scopes)
        return issued, records

    # -- /mcp --------------------------------------------------------------------------------
    def authenticate(self, token: str, resource: str) -> tuple[Actor, TokenRecord, Grant] | None:
        """Who an access token acts as on ``resource``: None when it is unknown, expired, for
        another resource, or its grant is revoked (checked on every request)."""
        if not token.startswith(ACCESS_PREFIX) or len(token) > 200:
            return None
        record = self._store.get_token(self._accounts.digest(token))
        if record is None or record.kind != "access" or record.expires_at <= self._clock():
            return None
        grant = self._store.get_grant(record.grant_id)
        if grant is None or grant.revoked_at is not None:
            return None
        if canonical(grant.resource) != canonical(resource):
            return None
        scopes = frozenset(Scope(s) for s in record.scopes if s in OAUTH_SCOPES)
        return Actor(grant.user_id, "mcp", grant.id, scopes), record, _grant(grant)

    def revoke_token(self, token: str) -> None:
        """RFC 7009: revoke the grant an access or refresh token belongs to (nothing for an
        unknown token)."""
        record = self._store.get_token(self._accounts.digest(token))
        grant = None if record is None else self._store.get_grant(record.grant_id)
        if grant is not None and grant.revoked_at is None:
            self._revoke(grant, "revoked by the client")

    # -- the user's view ---------------------------------------------------------------------
    def list_grants(self, actor: Actor, user_id: str | None = None) -> list[Grant]:
        """The actor's grants; with the admin scope another user's, or ``*`` for all."""
        if not actor.can(Scope.READ):
            raise PermissionDenied("this needs the 'read' scope", scope="read")
        if user_id not in (None, actor.user_id) and not actor.can(Scope.ADMIN):
            raise PermissionDenied("listing another user's grants needs the 'admin' scope")
        owner = None if user_id == "*" else (user_id or actor.user_id)
        return [_grant(g) for g in self._store.list_grants(owner)]

    def _visible(self, grant_id: str, actor: Actor, scope: Scope) -> GrantRecord:
        """The actor's own grant (any grant with the admin scope), if they hold ``scope``;
        another user's grant does not exist for them."""
        grant = self._store.get_grant(grant_id)
        if grant is None or (grant.user_id != actor.user_id and not actor.can(Scope.ADMIN)):
            raise NotFound(f"grant {grant_id!r} does not exist", grant_id=grant_id)
        if not actor.can(scope):
            raise PermissionDenied(f"this needs the {scope.value!r} scope", scope=scope.value)
        return grant

    def get_grant(self, grant_id: str, actor: Actor) -> Grant:
        return _grant(self._visible(grant_id, actor, Scope.READ))

    def revoke_grant(self, grant_id: str, actor: Actor) -> Grant:
        """Stop the grant's tokens at once (it stays listed, marked revoked): the actor's own
        grant with the write scope, anyone's with the admin scope."""
        grant = self._visible(grant_id, actor, Scope.WRITE)
        if grant.revoked_at is None:
            self._revoke(grant, "revoked by the user", actor)
        revoked = self._store.get_grant(grant_id)
        assert revoked is not None
        return _grant(revoked)

    def _revoke(self, grant: GrantRecord, reason: str, actor: Actor | None = None) -> None:
        who = actor or Actor(grant.user_id, INTERFACE, None, frozenset())
        entry = self._audit.entry(
            who,
            "oauth.grant.revoke",
            targets=[grant.id],
            before={grant.id: 1},
            after={grant.id: None},
            client_id=grant.client_id,
            reason=reason,
        )
        self._store.revoke_grant(grant.id, self._clock(), [entry])
