"""A remote MCP client signing in with OAuth, the way a person does it: the official MCP SDK's
OAuth client (``OAuthClientProvider``) registers itself and hands the authorization URL to a
real browser (Debian's Chromium driven by Playwright), which signs in on Engram's consent page
and clicks *Allow*; the page sends the browser back to the client's redirect URI, a real HTTP
listener on a loopback port, and the SDK takes the code from there. The MCP session then lists
and calls tools; the grant shows on the dashboard's keys page in the same browser, is revoked
there by a click, and the client's next MCP call fails at once. On both backends, against a
live uvicorn server. The consent page's screenshot (docs/screenshots/consent.png, shown in the
README) is written here."""

from __future__ import annotations

import re
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult

from engram import LOCAL, Engram
from engram.accounts import AuditQuery
from engram.actors import LOCAL_USER
from engram.servers import http_app
from engram.store import Store
from tests.conftest import FakeClock
from tests.live_server import serve
from tests.screenshots import shots_dir
from tests.test_oauth import INITIALIZE, MCP_HEADERS, PASSWORD, MemoryStorage, client_metadata

playwright_async = pytest.importorskip("playwright.async_api")
from playwright.async_api import Page, Route, expect  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [pytest.mark.slow, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Site:
    url: str
    engram: Engram

    @property
    def mcp(self) -> str:
        return self.url + "/mcp"


@pytest.fixture
def site(store: Store) -> Iterator[Site]:
    """``engram serve``'s app over the store on a free port; the owner, alice, has a password.
    Its clock is the wall clock's (the SDK checks the code's expiry against ``time.time()``)."""
    engram = Engram(store, clock=FakeClock(datetime.now(UTC)))
    engram.accounts.ensure_owner("alice")
    engram.accounts.set_password(LOCAL_USER, PASSWORD, LOCAL)
    engram.environments.create("default", LOCAL)
    with serve(engram, build=http_app) as url:
        yield Site(url, engram)


class _Landing(BaseHTTPRequestHandler):
    """The client's redirect URI: records each arrival and answers a small page."""

    arrivals: list[str]

    def do_GET(self) -> None:
        self.arrivals.append(self.path)
        body = b"<!doctype html><title>Signed in</title><p>You can close this window."
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def landing() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP listener on a loopback port: the redirect URI and what arrived there."""
    arrivals: list[str] = []
    handler = type("Landing", (_Landing,), {"arrivals": arrivals})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/callback", arrivals
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@dataclass
class Person:
    """The user at the browser the SDK sends to the authorization URL: signs in on the consent
    page and allows (or, when ``deny`` is set, denies)."""

    page: Page
    redirect_uri: str
    arrivals: list[str]
    deny: bool = False
    asked: list[str] = field(default_factory=list)
    """The authorization URLs the SDK handed over."""

    async def redirect(self, url: str) -> None:
        self.asked.append(url)
        await self.page.goto(url)  # /authorize sends the browser on to /oauth/consent
        await expect(self.page).to_have_url(re.compile(r"/oauth/consent\?request=\S+$"))
        await expect(self.page.get_by_role("heading", name="Sign in to Engram")).to_be_visible()
        await expect(self.page.locator(".client")).to_have_text("Browser Connector")
        if self.deny:
            await self.page.get_by_role("button", name="Deny").click()
        else:
            await self.page.get_by_label("User name").fill("alice")
            await self.page.get_by_label("Password").fill(PASSWORD)
            if len(self.asked) == 1:
                shot = shots_dir() / "consent.png"
                await self.page.screenshot(path=str(shot), full_page=True)
            await self.page.get_by_role("button", name="Allow").click()
        await expect(self.page).to_have_url(re.compile(re.escape(self.redirect_uri + "?")))
        await expect(self.page.get_by_text("You can close this window.")).to_be_visible()

    async def callback(self) -> AuthorizationCodeResult:
        """What the redirect brought back to the listener."""
        assert self.arrivals, "the browser never reached the redirect URI"
        query = {k: v[0] for k, v in parse_qs(urlsplit(self.arrivals[-1]).query).items()}
        if "error" in query:
            raise OAuthFlowError(f"the user answered {query['error']}")
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )


@asynccontextmanager
async def browser_page(site: Site, landing_uri: str) -> AsyncIterator[tuple[Page, list[str]]]:
    """A Chromium page whose requests may go only to the server and the redirect URI (the
    others are aborted and listed)."""
    assert CHROMIUM.exists(), "the browser tests need Debian's chromium: apt-get install chromium"
    allowed = (site.url + "/", landing_uri.rsplit("/", 1)[0] + "/")
    foreign: list[str] = []

    async def guard(route: Route) -> None:
        if route.request.url.startswith(allowed):
            await route.continue_()
        else:
            foreign.append(route.request.url)
            await route.abort()

    async with playwright_async.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            context = await browser.new_context(viewport={"width": 900, "height": 760})
            await context.route("**/*", guard)
            page = await context.new_page()
            page.on("dialog", lambda d: d.accept())  # the revoke button's confirmation
            yield page, foreign
        finally:
            await browser.close()


@asynccontextmanager
async def mcp_session(site: Site, auth: httpx2.Auth) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(auth=auth, timeout=60) as http:
        transport = streamable_http_client(site.mcp, http_client=http)
        async with Client(transport) as client:  # type: ignore[arg-type]
            yield client


def _text(result: Any) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


async def test_the_browser_signs_in_and_consents_and_a_revoked_grant_stops_at_once(
    site: Site, landing: tuple[str, list[str]]
) -> None:
    redirect_uri, arrivals = landing
    storage = MemoryStorage()
    metadata = client_metadata("Browser Connector", redirect_uri)
    async with browser_page(site, redirect_uri) as (page, foreign):
        person = Person(page, redirect_uri, arrivals)
        auth = OAuthClientProvider(site.mcp, metadata, storage, person.redirect, person.callback)
        ended: list[str] = []
        try:
            async with mcp_session(site, auth) as mcp:
                tools = {t.name for t in (await mcp.list_tools()).tools}
                assert {"remember", "recall"} <= tools
                stored = await mcp.call_tool(
                    "remember", {"content": "Alice reviews code on Fridays"}
                )
                assert not stored.is_error, _text(stored)
                found = await mcp.call_tool("recall", {"query": "when does alice review code"})
                assert "reviews code on Fridays" in _text(found)
                assert len(person.asked) == 1 and storage.tokens is not None
                access = storage.tokens.access_token

                # the grant, on the keys page of the dashboard, in the same browser
                (grant,) = site.engram.oauth.list_grants(LOCAL)
                await page.goto(site.url + "/ui/keys")
                await expect(page).to_have_url(f"{site.url}/ui/login?next=/ui/keys")
                await page.get_by_label("User name").fill("alice")
                await page.get_by_label("Password").fill(PASSWORD)
                await page.get_by_role("button", name="Sign in").click()
                row = page.locator(f"tr[data-grant={grant.id}]")
                await expect(row).to_contain_text("Browser Connector")
                await expect(row).to_contain_text("read, write")
                await expect(row.locator("td.state")).to_have_text("active")
                await row.get_by_role("button", name="Revoke").click()
                await expect(page.get_by_role("status")).to_contain_text(
                    "revoked the grant of Browser Connector"
                )
                await expect(row.locator("td.state")).to_contain_text("revoked")

                # the very next call is refused: the SDK is sent to sign in again, and the
                # person at the browser, shown the consent page once more, denies it; the
                # session ends with that
                person.deny = True
                await mcp.call_tool("remember", {"content": "Alice moved code review to Monday"})
                pytest.fail("a tool call went through after the grant was revoked")
        except* OAuthFlowError as group:
            ended.extend(str(e) for e in group.exceptions)
    assert ended == ["the user answered access_denied"] and len(person.asked) == 2

    with httpx.Client(timeout=60) as http:
        again = http.post(
            site.mcp, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {access}"}
        )
    assert again.status_code == 401
    contents = [m.content for m in site.engram.memories.list_memories(LOCAL, None).items]
    assert contents == ["Alice reviews code on Fridays"]  # nothing written after the revoke
    revokes = site.engram.audit.query(AuditQuery(action="oauth.grant.revoke"), LOCAL)
    assert [(e.targets, e.interface) for e in revokes] == [([grant.id], "web")]
    assert foreign == []
