"""Engram as the OAuth 2.1 authorization server of its own ``/mcp``, so remote MCP clients
(Claude.ai and ChatGPT connectors, the MCP Inspector) sign in with the user's password instead
of a pasted key (the MCP authorization spec; RFC 8414, 7591, 7636, 8707, 9207).

The MCP SDK's handlers serve the protocol endpoints over :class:`EngramProvider`:

- ``/.well-known/oauth-authorization-server`` (RFC 8414 metadata),
- ``/register`` (dynamic client registration, RFC 7591), bounded
  (:mod:`engram.oauth.registration`),
- ``/authorize`` (authorization code, PKCE S256 only), which sends the user on to
- ``/oauth/consent`` (:mod:`engram.oauth.consent`: sign in and consent),
- ``/token`` (code and refresh-token grants; refresh tokens rotate),
- ``/revoke`` (RFC 7009).

:func:`mount` adds them to the app; ``engram.servers`` then hands the provider to the MCP edge
as the verifier of non-API-key tokens.
"""

from __future__ import annotations

import logging

from mcp.server.auth.handlers.metadata import MetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.routes import (
    REGISTRATION_PATH,
    build_metadata,
    cors_middleware,
    create_auth_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthMetadata
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.routing import Route

from engram.oauth.consent import CONSENT_PATH, STYLE_PATH, ConsentPage
from engram.oauth.provider import EngramProvider
from engram.oauth.registration import BoundedRegistration
from engram.service import Engram
from engram.service.oauth import OAUTH_SCOPES

__all__ = ["METADATA_PATH", "EngramProvider", "mount"]

METADATA_PATH = "/.well-known/oauth-authorization-server"

log = logging.getLogger("engram.oauth")


def mount(app: Starlette, engram: Engram, issuer: str, resource: str) -> EngramProvider | None:
    """Serve the authorization server for ``resource`` (the /mcp URL) with ``issuer`` (the
    server's base URL) and return its provider, or None when ``issuer`` cannot be an OAuth
    issuer (plain http to a non-loopback name: set ``ENGRAM_PUBLIC_URL`` to an https URL)."""
    url = AnyHttpUrl(issuer)
    registration = ClientRegistrationOptions(
        enabled=True, valid_scopes=list(OAUTH_SCOPES), default_scopes=list(OAUTH_SCOPES)
    )
    revocation = RevocationOptions(enabled=True)
    provider = EngramProvider(engram, resource, issuer + CONSENT_PATH)
    try:
        routes = create_auth_routes(provider, url, None, registration, revocation)
    except ValueError as exc:
        log.warning("no OAuth sign-in for /mcp: %s (issuer %s)", exc, issuer)
        return None
    built = build_metadata(url, None, registration, revocation).model_dump(mode="json")
    # the issuer exactly as clients compare it (RFC 8414 §3.3: no added trailing slash); public
    # clients (Claude.ai, the Inspector, native apps) register with no secret; every answer
    # from /oauth/consent names the issuer (RFC 9207)
    metadata = OAuthMetadata.model_validate(
        {
            **built,
            "issuer": issuer,
            "token_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "authorization_response_iss_parameter_supported": True,
        }
    )
    handler = cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    register = BoundedRegistration(RegistrationHandler(provider, registration))
    page = ConsentPage(engram, issuer)
    ours = (METADATA_PATH, REGISTRATION_PATH)
    app.router.routes.extend(
        [
            Route(METADATA_PATH, handler, methods=["GET", "OPTIONS"]),
            Route(
                REGISTRATION_PATH,
                cors_middleware(register.handle, ["POST", "OPTIONS"]),
                methods=["POST", "OPTIONS"],
            ),
            *(r for r in routes if getattr(r, "path", "") not in ours),
            Route(CONSENT_PATH, page.show, methods=["GET"], include_in_schema=False),
            Route(CONSENT_PATH, page.submit, methods=["POST"], include_in_schema=False),
            Route(STYLE_PATH, page.style, methods=["GET"], include_in_schema=False),
        ]
    )
    return provider
