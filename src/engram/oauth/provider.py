"""The MCP SDK's authorization-server provider over :class:`engram.service.oauth.OAuthService`.

The SDK's handlers (``mcp.server.auth``) parse and check the requests — client registration,
the authorization request (PKCE S256 only, registered redirect URIs), the token request (the
code's verifier, redirect URI and expiry) — and call this provider, which keeps everything in
the store through the service. Every call runs the (blocking) service in a worker thread.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
    TokenVerifier,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ConfigDict
from starlette.datastructures import URL

from engram.config import is_loopback
from engram.errors import InvalidInput, Unauthenticated
from engram.service import Engram
from engram.service.oauth import OAUTH_SCOPES, CodeGrant, Issued, RefreshGrant, canonical


class EngramCode(AuthorizationCode):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    found: CodeGrant


class EngramRefresh(RefreshToken):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    found: RefreshGrant


def _token(issued: Issued) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",
        expires_in=issued.expires_in,
        scope=" ".join(issued.scopes),
        refresh_token=issued.refresh_token,
    )


def _check_redirect_uri(uri: str) -> None:
    """OAuth 2.1 §2.3.1 / RFC 8252: https, http only to a loopback address, or a private-use
    scheme (``cursor://…``) of a native app; never a fragment."""
    parts = urlsplit(uri)
    if parts.fragment:
        raise RegistrationError("invalid_redirect_uri", f"redirect URI {uri!r} has a fragment")
    if parts.scheme == "http" and not is_loopback(parts.hostname or ""):
        raise RegistrationError(
            "invalid_redirect_uri",
            f"redirect URI {uri!r} must use https (http only to a loopback address)",
        )
    if parts.scheme in ("javascript", "data", "file", "vbscript"):
        raise RegistrationError("invalid_redirect_uri", f"redirect URI {uri!r} is not allowed")


class EngramProvider(
    OAuthAuthorizationServerProvider[EngramCode, EngramRefresh, AccessToken], TokenVerifier
):
    """Clients, codes and tokens for ``resource`` (the /mcp URL); the user signs in and
    consents at ``consent_url``."""

    def __init__(self, engram: Engram, resource: str, consent_url: str) -> None:
        self._engram = engram
        self._oauth = engram.oauth
        self.resource = canonical(resource)
        self._consent_url = consent_url

    # -- clients -----------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        data = await anyio.to_thread.run_sync(self._oauth.client, client_id)
        return None if data is None else OAuthClientInformationFull.model_validate(data)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        for uri in client_info.redirect_uris or ():
            _check_redirect_uri(str(uri))
        data = client_info.model_dump(mode="json", exclude_none=True)
        await anyio.to_thread.run_sync(self._oauth.register_client, client_info.client_id, data)

    # -- /authorize: on to the sign-in page --------------------------------------------------
    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if params.resource is not None and canonical(params.resource) != self.resource:
            raise AuthorizeError(
                "invalid_target", f"this server issues tokens only for {self.resource}"
            )
        asked = params.scopes or (client.scope or "").split() or list(OAUTH_SCOPES)
        try:
            pending = self._oauth.pending(
                client_id=client.client_id or "",
                redirect_uri=str(params.redirect_uri),
                redirect_uri_explicit=params.redirect_uri_provided_explicitly,
                code_challenge=params.code_challenge,
                state=params.state,
                scopes=asked,
                resource=self.resource,
            )
        except InvalidInput as exc:
            raise AuthorizeError("invalid_scope", exc.message) from exc
        return str(URL(self._consent_url).include_query_params(request=self._oauth.seal(pending)))

    # -- /token ------------------------------------------------------------------------------
    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> EngramCode | None:
        found = await anyio.to_thread.run_sync(
            self._oauth.load_code, authorization_code, client.client_id or ""
        )
        if found is None:
            return None
        code, grant = found.code, found.grant
        return EngramCode(
            code=authorization_code,
            scopes=list(grant.scopes),
            expires_at=code.expires_at.timestamp(),
            client_id=grant.client_id,
            code_challenge=code.code_challenge,
            redirect_uri=code.redirect_uri,
            redirect_uri_provided_explicitly=code.redirect_uri_explicit,
            resource=grant.resource,
            subject=grant.user_id,
            found=found,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: EngramCode
    ) -> OAuthToken:
        try:
            issued = await anyio.to_thread.run_sync(self._oauth.redeem, authorization_code.found)
        except Unauthenticated as exc:
            raise TokenError("invalid_grant", exc.message) from exc
        return _token(issued)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> EngramRefresh | None:
        found = await anyio.to_thread.run_sync(
            self._oauth.load_refresh, refresh_token, client.client_id or ""
        )
        if found is None:
            return None
        return EngramRefresh(
            token=refresh_token,
            client_id=found.grant.client_id,
            scopes=list(found.token.scopes),
            expires_at=int(found.token.expires_at.timestamp()),
            resource=found.grant.resource,
            subject=found.grant.user_id,
            found=found,
        )

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: EngramRefresh,
        scopes: list[str],
    ) -> OAuthToken:
        try:
            issued = await anyio.to_thread.run_sync(self._oauth.rotate, refresh_token.found, scopes)
        except Unauthenticated as exc:
            raise TokenError("invalid_grant", exc.message) from exc
        except InvalidInput as exc:
            raise TokenError("invalid_scope", exc.message) from exc
        return _token(issued)

    # -- /mcp and /revoke --------------------------------------------------------------------
    async def load_access_token(self, token: str) -> AccessToken | None:
        found = await anyio.to_thread.run_sync(self._oauth.authenticate, token, self.resource)
        if found is None:
            return None
        actor, record, grant = found
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            subject=actor.user_id,
            scopes=sorted(s.value for s in actor.scopes),
            expires_at=int(record.expires_at.timestamp()),
            resource=grant.resource,
            claims={"key_id": grant.id},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self.load_access_token(token)

    async def revoke_token(self, token: AccessToken | EngramRefresh) -> None:
        await anyio.to_thread.run_sync(self._oauth.revoke_token, token.token)
