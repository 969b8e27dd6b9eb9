"""Engram as the OAuth 2.1 authorization server of its own /mcp, against a live uvicorn server
on both backends: the official MCP SDK's OAuth client (``OAuthClientProvider``) signs in
end to end, the sign-in and consent page completed by an HTTP client posting its form (the
same flow with a real browser is tests/test_oauth_browser.py); then the protocol's refusals
one by one with raw HTTP: PKCE, the redirect URI, a reused code, an expired token, refresh
rotation and replay, scope narrowing, the resource, CSRF, a wrong password, a revoked grant
failing at once, and registration's bounds (per address, in size, and the cap on clients no
one consented to, cleaned up)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

from engram import LOCAL, Engram
from engram.accounts import AuditQuery, Scope
from engram.actors import LOCAL_USER
from engram.oauth.registration import MAX_REGISTRATION_BYTES, PER_ADDRESS
from engram.servers import http_app
from engram.service.oauth import UNCLAIMED_CLIENTS
from engram.store import Store
from tests.conftest import FakeClock
from tests.live_server import serve

PASSWORD = "correct horse battery"
CALLBACK = "http://127.0.0.1:9/callback"
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@dataclass
class Server:
    url: str
    engram: Engram
    clock: FakeClock
    api_key: str

    @property
    def mcp(self) -> str:
        return self.url + "/mcp"

    def rest(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.api_key}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server(store: Store) -> Iterator[Server]:
    """``engram serve``'s app over the store (SQLite, then PostgreSQL) on a free port, its
    clock near the wall clock (the SDK checks code expiry against ``time.time()``) so a test
    can move it on; the owner, alice, has a password and an admin API key."""
    clock = FakeClock(datetime.now(UTC))
    engram = Engram(store, clock=clock)
    engram.accounts.ensure_owner("alice")
    engram.accounts.set_password(LOCAL_USER, PASSWORD, LOCAL)
    key = engram.accounts.issue_key(LOCAL, "admin", list(Scope)).token
    engram.environments.create("default", LOCAL)
    with serve(engram, build=http_app) as url:
        yield Server(url, engram, clock, key)


# -- the sign-in page, driven by an HTTP client posting its form -------------------------------
def _form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', html))


def sign_in(
    http: httpx.Client,
    authorize_url: str,
    *,
    password: str = PASSWORD,
    scopes: tuple[str, ...] = ("read", "write"),
    action: str = "allow",
    csrf: bool = True,
) -> httpx.Response:
    """Follow /authorize to the consent page and post its form; the answer (a 303 back to the
    client on success)."""
    to_page = http.get(authorize_url)
    assert to_page.status_code == 302, to_page.text
    page = http.get(to_page.headers["location"])
    assert page.status_code == 200, page.text
    fields = _form_fields(page.text)
    data: dict[str, Any] = {
        "request": fields["request"],
        "username": "alice",
        "password": password,
        "scope": list(scopes),
        "action": action,
    }
    if csrf:
        data["csrf"] = fields["csrf"]
    return http.post("/oauth/consent", data=data)


def callback_params(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith(CALLBACK)
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


# -- the official SDK client ---------------------------------------------------------------------
@dataclass
class MemoryStorage(TokenStorage):
    tokens: OAuthToken | None = None
    client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


@dataclass
class Browser:
    """Stands in for the user's browser: signs in on the page the SDK sends it to."""

    base_url: str
    scopes: tuple[str, ...] = ("read", "write")
    pages: list[str] = field(default_factory=list)
    result: AuthorizationCodeResult | None = None

    async def redirect(self, url: str) -> None:
        self.pages.append(url)
        with httpx.Client(base_url=self.base_url, timeout=60) as http:
            params = callback_params(sign_in(http, url, scopes=self.scopes))
        self.result = AuthorizationCodeResult(
            code=params["code"], state=params.get("state"), iss=params.get("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def client_metadata(name: str, redirect_uri: str = CALLBACK) -> OAuthClientMetadata:
    """A public client's registration, as a remote connector sends it."""
    return OAuthClientMetadata(
        client_name=name,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )


def sdk_auth(server: Server, browser: Browser, storage: MemoryStorage) -> OAuthClientProvider:
    metadata = client_metadata("Test Connector")
    return OAuthClientProvider(server.mcp, metadata, storage, browser.redirect, browser.callback)


@asynccontextmanager
async def mcp_client(
    server: Server, auth: httpx2.Auth | None = None, token: str | None = None
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(auth=auth, headers=headers, timeout=60) as http:
        transport = streamable_http_client(server.mcp, http_client=http)
        async with Client(transport) as c:  # type: ignore[arg-type]
            yield c


def text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


@pytest.mark.slow
@pytest.mark.anyio
async def test_sdk_client_signs_in_and_uses_mcp_until_the_grant_is_revoked(
    server: Server,
) -> None:
    storage = MemoryStorage()
    browser = Browser(server.url)
    async with mcp_client(server, sdk_auth(server, browser, storage)) as c:
        stored = await c.call_tool("remember", {"content": "Alice prefers tabs over spaces"})
        assert not stored.is_error, text(stored)
        found = await c.call_tool("recall", {"query": "tabs or spaces"})
        assert "prefers tabs" in text(found)
    # the SDK registered itself, went through the page once and holds a bound, rotating pair
    assert len(browser.pages) == 1
    assert storage.client is not None and storage.tokens is not None
    tokens = storage.tokens
    assert tokens.scope == "read write" and tokens.refresh_token
    assert tokens.expires_in == 3600

    with server.rest() as rest:
        grants = rest.get("/api/v1/oauth/grants").json()
    assert [(g["client_name"], g["scopes"], g["resource"]) for g in grants] == [
        ("Test Connector", ["read", "write"], server.mcp)
    ]
    grant_id = grants[0]["id"]
    # the memory was written by alice, through that grant
    entries = server.engram.audit.query(AuditQuery(action="oauth."), LOCAL)
    assert [(e.action, e.targets, e.user_id) for e in entries] == [
        ("oauth.grant", [grant_id], LOCAL_USER)
    ]
    assert set(entries[0].details) == {"client_id", "scopes"}  # ids only, never a token
    written = server.engram.audit.query(AuditQuery(action="memory.create"), LOCAL)
    assert written and written[0].key_id == grant_id and written[0].interface == "mcp"

    # the same access token works ... until the grant is revoked, then at once it does not
    async with mcp_client(server, token=tokens.access_token) as c:
        assert (await c.list_tools()).tools
    with server.rest() as rest:
        revoked = rest.delete(f"/api/v1/oauth/grants/{grant_id}")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    with httpx.Client(timeout=60, headers=MCP_HEADERS) as http:
        after = http.post(
            server.mcp, json=INITIALIZE, headers={"Authorization": f"Bearer {tokens.access_token}"}
        )
        refreshed = http.post(
            server.url + "/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
                "client_id": storage.client.client_id,
            },
        )
    assert after.status_code == 401
    assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant"
    revokes = server.engram.audit.query(AuditQuery(action="oauth.grant.revoke"), LOCAL)
    assert [e.targets for e in revokes] == [[grant_id]]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_read_only_grant_cannot_write_through_mcp_tools(server: Server) -> None:
    browser = Browser(server.url, scopes=("read",))
    storage = MemoryStorage()
    async with mcp_client(server, sdk_auth(server, browser, storage)) as c:
        refused = await c.call_tool("remember", {"content": "Alice likes green tea"})
        listed = await c.call_tool("recall", {"query": "green tea"})
    assert storage.tokens is not None and storage.tokens.scope == "read"
    assert refused.is_error and "write" in text(refused)
    assert not listed.is_error and listed.structured_content is not None
    assert listed.structured_content["items"] == []  # reading works; nothing was written


# -- the protocol, step by step ------------------------------------------------------------------
def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass
class RawClient:
    """A public client registered with /register, speaking the protocol by hand."""

    server: Server
    http: httpx.Client
    client_id: str

    def authorize_url(self, challenge: str, **extra: str) -> str:
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": CALLBACK,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": "st-1",
            "resource": self.server.mcp,
            **extra,
        }
        return str(httpx.URL(self.server.url + "/authorize", params=params))

    def code(self, **kwargs: Any) -> tuple[str, str]:
        verifier, challenge = pkce()
        params = callback_params(sign_in(self.http, self.authorize_url(challenge), **kwargs))
        assert params["state"] == "st-1" and params["iss"] == self.server.url
        return params["code"], verifier

    def token(self, **data: str) -> httpx.Response:
        return self.http.post("/token", data={"client_id": self.client_id, **data})

    def exchange(self, code: str, verifier: str, redirect_uri: str = CALLBACK) -> httpx.Response:
        return self.token(
            grant_type="authorization_code",
            code=code,
            code_verifier=verifier,
            redirect_uri=redirect_uri,
        )

    def refresh(self, refresh_token: str, **extra: str) -> httpx.Response:
        return self.token(grant_type="refresh_token", refresh_token=refresh_token, **extra)

    def mcp_status(self, access_token: str) -> int:
        answer = self.http.post(
            "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {access_token}"},
        )
        return answer.status_code


@pytest.fixture
def raw(server: Server) -> Iterator[RawClient]:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        registered = http.post(
            "/register",
            json={
                "client_name": "Raw <Client>",
                "redirect_uris": [CALLBACK, "http://127.0.0.1:9/other"],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            },
        )
        assert registered.status_code == 201, registered.text
        yield RawClient(server, http, registered.json()["client_id"])


def test_discovery_metadata_and_the_401_challenge(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        anonymous = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        resource = http.get("/.well-known/oauth-protected-resource/mcp").json()
        root = http.get("/.well-known/oauth-protected-resource").json()
        authz = http.get("/.well-known/oauth-authorization-server").json()
        api_key = http.post(
            "/mcp",
            json=INITIALIZE,
            headers={**MCP_HEADERS, "Authorization": f"Bearer {server.api_key}"},
        )
    assert anonymous.status_code == 401
    challenge = anonymous.headers["www-authenticate"]
    assert f'resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"' in challenge
    for document in (resource, root):
        assert document["resource"] == server.mcp
        assert document["authorization_servers"] == [server.url]
        assert document["scopes_supported"] == ["read", "write"]
    assert authz["issuer"] == server.url
    assert authz["code_challenge_methods_supported"] == ["S256"]
    assert authz["registration_endpoint"] == server.url + "/register"
    assert authz["authorization_endpoint"] == server.url + "/authorize"
    assert authz["token_endpoint"] == server.url + "/token"
    assert authz["revocation_endpoint"] == server.url + "/revoke"
    assert authz["scopes_supported"] == ["read", "write"]
    assert "none" in authz["token_endpoint_auth_methods_supported"]
    assert authz["authorization_response_iss_parameter_supported"] is True
    assert api_key.status_code == 200  # API keys keep working on /mcp


def test_registration_refuses_a_plain_http_redirect_uri(server: Server) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        refused = http.post(
            "/register",
            json={"client_name": "x", "redirect_uris": ["http://evil.example/cb"]},
        )
    assert refused.status_code == 400
    assert refused.json()["error"] == "invalid_redirect_uri"


def test_the_consent_page_names_client_and_scopes_and_is_locked_down(raw: RawClient) -> None:
    _, challenge = pkce()
    to_page = raw.http.get(raw.authorize_url(challenge))
    page = raw.http.get(to_page.headers["location"])
    assert "Raw &lt;Client&gt;" in page.text and "<Client>" not in page.text  # escaped
    assert 'value="read"' in page.text and 'value="write"' in page.text
    assert "127.0.0.1:9" in page.text  # where the user goes back to
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "form-action 'self' http://127.0.0.1:9" in csp
    assert re.findall(r'(?:href|src)="([^"]+)"', page.text) == ["/oauth/consent.css"]
    cookie = page.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert raw.http.get("/oauth/consent.css").headers["content-type"].startswith("text/css")


def test_csrf_wrong_password_and_deny_give_no_code(raw: RawClient) -> None:
    grants_before = raw.server.engram.store.oauth.list_grants()
    for kwargs, status in (({"csrf": False}, 403), ({"password": "wrong password"}, 401)):
        _, challenge = pkce()
        answer = sign_in(raw.http, raw.authorize_url(challenge), **kwargs)
        assert answer.status_code == status
        assert "location" not in answer.headers
    _, challenge = pkce()
    denied = callback_params(sign_in(raw.http, raw.authorize_url(challenge), action="deny"))
    assert denied["error"] == "access_denied" and denied["state"] == "st-1"
    assert raw.server.engram.store.oauth.list_grants() == grants_before == []


def test_authorize_refuses_plain_pkce_an_unregistered_redirect_and_another_resource(
    raw: RawClient,
) -> None:
    _, challenge = pkce()
    plain = raw.http.get(raw.authorize_url(challenge, code_challenge_method="plain"))
    # a registered redirect URI: the error goes back to the client
    assert plain.status_code == 302 and "error=invalid_request" in plain.headers["location"]
    elsewhere = raw.http.get(raw.authorize_url(challenge, redirect_uri="http://127.0.0.1:9/x"))
    # never redirect to an unregistered URI: the error is shown here
    assert elsewhere.status_code == 400 and "location" not in elsewhere.headers
    other = raw.http.get(raw.authorize_url(challenge, resource="https://other.example/mcp"))
    assert other.status_code == 302 and "error=invalid_target" in other.headers["location"]
    no_challenge = raw.http.get(raw.authorize_url("").replace("code_challenge=&", ""))
    assert "error=invalid_request" in no_challenge.headers.get("location", no_challenge.text)


def test_pkce_redirect_uri_and_a_reused_code(raw: RawClient) -> None:
    code, verifier = raw.code()
    wrong_verifier = raw.exchange(code, pkce()[0])
    assert wrong_verifier.status_code == 400
    assert wrong_verifier.json()["error"] == "invalid_grant"
    wrong_redirect = raw.exchange(code, verifier, redirect_uri="http://127.0.0.1:9/other")
    assert wrong_redirect.status_code == 400
    assert "redirect_uri" in wrong_redirect.json()["error_description"]
    good = raw.exchange(code, verifier)
    assert good.status_code == 200, good.text
    access = good.json()["access_token"]
    assert raw.mcp_status(access) == 200
    again = raw.exchange(code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    # a replayed code revokes its grant: the tokens issued for it stop working
    assert raw.mcp_status(access) == 401
    (grant,) = raw.server.engram.store.oauth.list_grants()
    assert grant.revoked_at is not None


def test_refresh_rotates_narrows_and_a_replay_revokes(raw: RawClient) -> None:
    code, verifier = raw.code()
    first = raw.exchange(code, verifier).json()
    second = raw.refresh(first["refresh_token"], scope="read")
    assert second.status_code == 200, second.text
    narrowed = second.json()
    assert narrowed["scope"] == "read"
    assert narrowed["refresh_token"] != first["refresh_token"]
    widened = raw.refresh(narrowed["refresh_token"], scope="read write")
    assert widened.status_code == 400 and widened.json()["error"] == "invalid_scope"
    assert raw.mcp_status(narrowed["access_token"]) == 200
    # the rotated refresh token, presented again: someone copied it, so the grant ends
    replay = raw.refresh(first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert raw.mcp_status(narrowed["access_token"]) == 401
    assert raw.refresh(narrowed["refresh_token"]).status_code == 400


def test_an_expired_access_token_is_refused_and_refresh_renews_it(raw: RawClient) -> None:
    code, verifier = raw.code()
    tokens = raw.exchange(code, verifier).json()
    raw.server.clock.advance(minutes=61)
    assert raw.mcp_status(tokens["access_token"]) == 401
    renewed = raw.refresh(tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    assert raw.mcp_status(renewed.json()["access_token"]) == 200


def test_an_expired_code_is_refused(raw: RawClient) -> None:
    code, verifier = raw.code()
    raw.server.clock.advance(minutes=6)  # codes last five minutes
    late = raw.exchange(code, verifier)
    assert late.status_code == 400 and late.json()["error"] == "invalid_grant"
    assert "expired" in late.json()["error_description"]


def test_revocation_endpoint_and_tokens_are_not_api_keys(raw: RawClient) -> None:
    code, verifier = raw.code()
    tokens = raw.exchange(code, verifier).json()
    rest = raw.http.get(
        "/api/v1/environments", headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert rest.status_code == 401  # bound to /mcp: not a key for the REST API
    revoked = raw.http.post(
        "/revoke",
        # the SDK's handler wants the field even from a public client (empty then)
        data={"token": tokens["refresh_token"], "client_id": raw.client_id, "client_secret": ""},
    )
    assert revoked.status_code == 200
    assert raw.mcp_status(tokens["access_token"]) == 401


def test_grants_are_per_user(raw: RawClient) -> None:
    code, verifier = raw.code()
    raw.exchange(code, verifier)
    engram = raw.server.engram
    bob = engram.accounts.create_user("bob", LOCAL)
    bob_key = engram.accounts.issue_key(LOCAL, "bob", [Scope.READ, Scope.WRITE], user_id=bob.id)
    (grant,) = engram.store.oauth.list_grants()
    with httpx.Client(base_url=raw.server.url, timeout=60) as http:
        headers = {"Authorization": f"Bearer {bob_key.token}"}
        assert http.get("/api/v1/oauth/grants", headers=headers).json() == []
        assert http.delete(f"/api/v1/oauth/grants/{grant.id}", headers=headers).status_code == 404
        everyone = http.get("/api/v1/oauth/grants?user_id=*", headers=headers)
        assert everyone.status_code == 403
    assert engram.store.oauth.get_grant(grant.id).revoked_at is None  # type: ignore[union-attr]


# -- registration is bounded ---------------------------------------------------------------------
def _registration(name: str) -> dict[str, Any]:
    return {
        "client_name": name,
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    }


def test_registration_is_limited_per_address_and_in_size(server: Server) -> None:
    registry = server.engram.store.oauth_registry
    with httpx.Client(base_url=server.url, timeout=60) as http:
        huge = http.post("/register", json=_registration("x" * (MAX_REGISTRATION_BYTES + 1)))
        assert huge.status_code == 413 and huge.json()["error"] == "invalid_client_metadata"
        for i in range(PER_ADDRESS - 1):
            assert http.post("/register", json=_registration(f"c{i}")).status_code == 201
        refused = http.post("/register", json=_registration("one too many"))
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert refused.json()["error_description"].startswith(
        f"too many client registrations from 127.0.0.1: at most {PER_ADDRESS} an hour"
    )
    assert 3500 < int(refused.headers["retry-after"]) <= 3601
    assert registry.unclaimed() == PER_ADDRESS - 1  # neither refusal stored anything


def test_unclaimed_clients_are_capped_and_cleaned_up(raw: RawClient) -> None:
    engram = raw.server.engram
    code, verifier = raw.code()  # raw's client gets a grant: it is claimed
    tokens = raw.exchange(code, verifier).json()
    registry = engram.store.oauth_registry
    assert registry.unclaimed() == 0
    for i in range(UNCLAIMED_CLIENTS - 1):
        engram.oauth.register_client(f"waiting-{i}", _registration(f"w{i}"))
    last = raw.http.post("/register", json=_registration("the last one"))
    assert last.status_code == 201 and registry.unclaimed() == UNCLAIMED_CLIENTS
    full = raw.http.post("/register", json=_registration("no room"))
    assert full.status_code == 429 and full.json()["error"] == "temporarily_unavailable"
    assert full.json()["error_description"].startswith(
        f"{UNCLAIMED_CLIENTS} registered OAuth clients are waiting for a first sign-in"
    )
    assert full.headers["retry-after"] == "3600"
    assert registry.unclaimed() == UNCLAIMED_CLIENTS
    # a day later the clients nobody consented to are gone; the claimed one stays and works
    raw.server.clock.advance(hours=25)
    later = raw.http.post("/register", json=_registration("a day later"))
    assert later.status_code == 201 and registry.unclaimed() == 1
    assert engram.oauth.client("waiting-0") is None
    assert engram.oauth.client(raw.client_id) is not None
    assert raw.refresh(tokens["refresh_token"]).status_code == 200
