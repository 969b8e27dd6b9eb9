"""The dashboard in a real browser: Debian's Chromium driven by Playwright against a live uvicorn
server, through the flows a person follows. One browser for the module and one page per user,
reused from test to test (the tests run in order and build on each other). Every request the
pages make is intercepted: none may leave the server's origin. The screenshots in
docs/screenshots/ (shown in the README) are written here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from engram import LOCAL, Engram
from engram.accounts import Role
from engram.api import ServerSettings
from engram.embeddings.static import StaticEmbedder
from engram.models import NewMemory
from engram.servers import http_app
from engram.store.sqlite import SQLiteStore
from tests import export_fixtures as fx
from tests.live_server import running
from tests.screenshots import shots_dir

playwright_sync = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
OWNER_PASSWORD = "owner-pass-123"
READER_PASSWORD = "reader-pass-123"

pytestmark = pytest.mark.slow


@dataclass
class Site:
    url: str
    engram: Engram
    shared_env: str
    reader_id: str
    foreign: list[str] = field(default_factory=list)
    """Requests the pages tried to send anywhere but the server (aborted)."""
    csp_errors: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, default_embedder: StaticEmbedder
) -> Iterator[Site]:
    home = tmp_path_factory.mktemp("web")
    engram = Engram(SQLiteStore(home / "engram.db"), embedder=default_embedder)
    owner, _ = engram.accounts.ensure_owner("owner")
    engram.accounts.set_password(owner.id, OWNER_PASSWORD, LOCAL)
    reader = engram.accounts.create_user("rita", LOCAL, password=READER_PASSWORD)
    shared = engram.environments.create("team", LOCAL)
    engram.environments.share(shared.id, reader.id, Role.READER, LOCAL)
    try:
        with running(lambda port: http_app(engram, ServerSettings(port=port))) as url:
            yield Site(url, engram, shared.id, reader.id)
    finally:
        engram.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert CHROMIUM.exists(), "the dashboard tests need Debian's chromium: apt-get install chromium"
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


def _context(browser: Browser, site: Site, **options: object) -> BrowserContext:
    context = browser.new_context(base_url=site.url, **options)  # type: ignore[arg-type]

    def guard(route: Route) -> None:
        if route.request.url.startswith(site.url + "/"):
            route.continue_()
        else:
            site.foreign.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    return context


def _page(context: BrowserContext, site: Site) -> Page:
    page = context.new_page()
    page.on(
        "console",
        lambda m: site.csp_errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    page.on("dialog", lambda d: d.accept())  # the confirmations of delete, restore, revoke
    return page


@pytest.fixture(scope="module")
def owner(browser: Browser, site: Site) -> Iterator[Page]:
    context = _context(browser, site, viewport={"width": 1280, "height": 900})
    yield _page(context, site)
    context.close()


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=str(shots_dir() / f"{name}.png"), full_page=True)


def _sign_in(page: Page, name: str, password: str) -> None:
    page.goto("/ui/login")
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def _csrf(page: Page) -> str:
    value = page.locator("input[name=csrf]").first.get_attribute("value")
    assert value
    return value


def test_sign_in(owner: Page, site: Site) -> None:
    owner.goto("/ui/memories")
    expect(owner).to_have_url(re.compile(r"/ui/login\?next=/ui/memories$"))
    _sign_in(owner, "owner", "wrong password")
    expect(owner.get_by_role("alert")).to_have_text("wrong user name or password")
    _shot(owner, "login")
    _sign_in(owner, "owner", OWNER_PASSWORD)
    expect(owner.get_by_role("heading", name="Memories")).to_be_visible()
    [cookie] = [c for c in owner.context.cookies() if c["name"] == "engram_session"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    headers = owner.request.get("/ui/memories").headers
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp


def _add(page: Page, content: str, **fields: str) -> None:
    """Add a memory with the form on the memories page (fields: label -> value)."""
    page.goto("/ui/memories")
    page.get_by_text("Add a memory").click()
    form = page.locator("#add-memory")
    form.get_by_label("Content").fill(content)
    for label, value in fields.items():
        form.get_by_label(label).fill(value)
    form.get_by_role("button", name="Remember").click()


def test_add_a_memory_and_find_it_with_its_breakdown(owner: Page) -> None:
    _add(owner, "The release train leaves every Thursday at 10:00", Tags="ops, release")
    expect(owner.locator("#memory-content")).to_have_text(
        "The release train leaves every Thursday at 10:00"
    )
    owner.goto("/ui/memories")
    owner.get_by_role("searchbox", name="Search").fill("when does the release train leave")
    owner.get_by_role("button", name="Apply").click()
    first = owner.locator("li.result").first
    expect(first).to_contain_text("The release train leaves every Thursday")
    rows = first.locator("tr.factor")
    expect(rows).to_have_count(5)
    relevance = first.locator("tr[data-factor=relevance] td").last.inner_text()
    assert float(relevance) > 0
    expect(first.locator(".stream[data-stream=keyword]")).to_be_visible()
    assert first.locator("svg.stack rect").count() == 5
    _shot(owner, "search")


def test_edit_see_the_diff_and_restore(owner: Page) -> None:
    owner.goto("/ui/memories")
    owner.get_by_role("link", name="The release train leaves every Thursday at 10:00").click()
    edit = owner.locator("#edit-memory")
    edit.get_by_label("Content").fill("The release train leaves every Friday at 10:00")
    edit.get_by_label("Why (kept in the history)").fill("moved a day")
    edit.get_by_role("button", name="Save").click()
    expect(owner.locator("#memory-content")).to_have_text(
        "The release train leaves every Friday at 10:00"
    )
    diff = owner.locator("pre.diff")
    expect(diff.locator(".del")).to_have_text("-The release train leaves every Thursday at 10:00")
    expect(diff.locator(".add")).to_have_text("+The release train leaves every Friday at 10:00")
    expect(owner.locator(".timeline")).to_contain_text("moved a day")
    _shot(owner, "memory")
    owner.get_by_role("button", name="Restore v1").click()
    expect(owner.locator("#memory-content")).to_have_text(
        "The release train leaves every Thursday at 10:00"
    )
    expect(owner.locator(".timeline li").first).to_contain_text("v3 restore")


def test_accept_a_review(owner: Page, site: Site) -> None:
    _add(owner, "User prefers dark mode", Importance="0.9")
    _add(owner, "User prefers light mode")
    expect(owner.get_by_role("status")).to_have_text("queued")
    owner.goto("/ui/reviews")
    review = owner.locator("article.review")
    expect(review).to_have_count(1)
    expect(review.locator(".side").first).to_contain_text("User prefers light mode")
    expect(review.locator(".side").last).to_contain_text("User prefers dark mode")
    _shot(owner, "reviews")
    review.get_by_role("button", name="Accept: newer supersedes older").click()
    expect(owner.get_by_text("Nothing waits for review.")).to_be_visible()
    dark = site.engram.memories.list_memories(LOCAL, None).items
    assert not any(m.content == "User prefers dark mode" for m in dark)  # superseded


def test_edit_a_soul_block_and_restore_a_snapshot(owner: Page) -> None:
    owner.goto("/ui/soul")
    owner.get_by_label("Label").fill("before the edit")
    owner.get_by_role("button", name="Take snapshot").click()
    expect(owner.get_by_role("status")).to_have_text("snapshot taken")
    block = owner.locator("section.block").first
    name = block.get_attribute("data-block")
    before = block.get_by_label("Text").input_value()
    block.get_by_label("Text").fill("Answer in haiku, always.")
    block.get_by_role("button", name=f"Save {name}").click()
    expect(owner.locator(f"section.block[data-block={name}] textarea")).to_have_value(
        "Answer in haiku, always."
    )
    owner.locator("li", has_text="before the edit").get_by_role(
        "link", name="diff with now"
    ).click()
    expect(owner.locator("pre.diff .add")).to_contain_text(["+Answer in haiku, always."])
    _shot(owner, "soul")
    owner.locator("li", has_text="before the edit").get_by_role("button", name="Restore").click()
    expect(owner.get_by_role("status")).to_contain_text("restored 1 block")
    expect(owner.locator(f"section.block[data-block={name}] textarea")).to_have_value(before)


def test_an_override_saves_only_what_the_form_changed(owner: Page, site: Site) -> None:
    """The "Overrides in <env>" tab shows a block that has no override with its effective text
    and mode inherit, so saving a new priority alone keeps the text (the form once showed an
    empty box with ``replace`` preselected, and that save blanked the block there)."""
    soul = site.engram.soul
    soul.set_block("worldview", LOCAL, "Evidence over authority.")
    owner.goto("/ui/soul?layer=environment")
    block = owner.locator("section.block[data-block=worldview]")
    expect(block.get_by_label("Text")).to_have_value("Evidence over authority.")
    expect(block.get_by_label("Mode")).to_have_value("inherit")
    block.get_by_label("Priority").fill("10")
    block.get_by_role("button", name="Save worldview").click()
    expect(owner.get_by_role("status")).to_have_text("saved worldview")
    [override] = [b for b in soul.layer(LOCAL, _default_env(site)) if b.name == "worldview"]
    assert (override.mode.value, override.text, override.priority) == ("inherit", "", 10)
    seen = soul.get_block("worldview", LOCAL)
    assert (seen.text, seen.priority) == ("Evidence over authority.", 10)
    assert "worldview" in soul.render(LOCAL, max_tokens=2000).included
    block = owner.locator("section.block[data-block=worldview]")
    expect(block.get_by_label("Mode")).to_have_value("inherit")
    # editing the text under inherit overrides it; back to inherit, the global text returns
    block.get_by_label("Text").fill("Here: ship small changes.")
    block.get_by_role("button", name="Save worldview").click()
    block = owner.locator("section.block[data-block=worldview]")
    expect(block.get_by_label("Mode")).to_have_value("replace")
    expect(block.get_by_label("Text")).to_have_value("Here: ship small changes.")
    assert soul.get_block("worldview", LOCAL).text == "Here: ship small changes."
    block.get_by_label("Mode").select_option("inherit")
    block.get_by_role("button", name="Save worldview").click()
    expect(owner.locator("section.block[data-block=worldview] textarea")).to_have_value(
        "Evidence over authority."
    )
    assert soul.get_block("worldview", LOCAL).text == "Evidence over authority."
    # extend the inherited text shown: only the added line is the override's
    block = owner.locator("section.block[data-block=worldview]")
    block.get_by_label("Text").fill("Evidence over authority.\nHere, tests first.")
    block.get_by_label("Mode").select_option("extend")
    block.get_by_role("button", name="Save worldview").click()
    expect(owner.locator("section.block[data-block=worldview] textarea")).to_have_value(
        "Here, tests first."
    )
    seen = soul.get_block("worldview", LOCAL)
    assert seen.text.startswith("Evidence over authority.") and seen.text.count("Evidence") == 1
    assert seen.text.endswith("Here, tests first.")


def _default_env(site: Site) -> str:
    return site.engram.environments.resolve(None, LOCAL).id


def test_preview_a_context(owner: Page) -> None:
    owner.goto("/ui/context")
    owner.get_by_role("searchbox", name="Query").fill("release train")
    owner.get_by_label("Token budget").fill("300")
    owner.get_by_role("button", name="Preview").click()
    block = owner.locator("#context-block")
    expect(block).to_contain_text("The release train leaves every Thursday at 10:00")
    expect(owner.locator("tr[data-tier=facts]")).to_be_visible()
    expect(owner.locator("tr[data-tier=soul]")).to_be_visible()
    assert "300 tokens" in owner.locator("main").inner_text()
    _shot(owner, "context")


def test_import_a_chatgpt_export_and_find_a_memory_from_it(owner: Page, tmp_path: Path) -> None:
    export = fx.chatgpt_export(tmp_path / "chatgpt.zip")
    owner.goto("/ui/transfer")
    owner.locator("#import-form input[type=file]").set_input_files(str(export))
    owner.get_by_role("button", name="Preview").click()
    preview = owner.locator("#import-preview")
    expect(preview).to_contain_text("chatgpt.zip")
    expect(preview.locator("tbody tr").first).to_contain_text("chatgpt")
    owner.get_by_role("button", name="Import it").click()
    expect(owner).to_have_url(re.compile(r"/ui/transfer/jobs/"))  # reloads until it is done
    expect(owner.locator("#import-report")).to_contain_text(
        "Imported chatgpt.zip: 2 conversation", timeout=60_000
    )
    _shot(owner, "import")
    owner.goto("/ui/memories?q=which+database+for+billing")
    expect(owner.locator("li.result").first).to_contain_text("PostgreSQL")


def test_create_and_revoke_a_key(owner: Page, site: Site) -> None:
    owner.goto("/ui/keys")
    form = owner.locator("#create-key")
    form.get_by_label("Name").fill("laptop")
    form.get_by_role("button", name="Create key").click()
    token = owner.locator("#new-token").inner_text().strip()
    assert token.startswith("egm_")
    auth = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{site.url}/api/v1/facts", headers=auth).status_code == 200
    _shot(owner, "keys")
    owner.goto("/ui/keys")
    assert token not in owner.content()  # shown once
    row = owner.locator("tr[data-name=laptop]")
    row.get_by_role("button", name="Revoke").click()
    expect(owner.locator("tr[data-name=laptop] td.state")).to_have_text("revoked")
    assert httpx.get(f"{site.url}/api/v1/facts", headers=auth).status_code == 401
    # a key is never a browser session, as a cookie or as a header
    cookie = {"engram_session": token}
    r = httpx.get(f"{site.url}/ui/memories", cookies=cookie, headers=auth)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login")


def test_reloading_the_page_of_a_new_token_makes_no_second_key(owner: Page, site: Site) -> None:
    """The token page is a GET after a redirect, so a reload shows the keys without the token
    and creates nothing (it was the POST's answer: a reload made another live key)."""
    owner.goto("/ui/keys")
    form = owner.locator("#create-key")
    form.get_by_label("Name").fill("reload-dup")
    form.get_by_role("button", name="Create key").click()
    token = owner.locator("#new-token").inner_text().strip()
    assert token.startswith("egm_")
    expect(owner).to_have_url(re.compile(r"/ui/keys\?issued=key_"))
    owner.reload()
    expect(owner.locator("tr[data-name=reload-dup]")).to_have_count(1)
    assert token not in owner.content()
    named = [k for k in site.engram.accounts.list_keys(LOCAL) if k.name == "reload-dup"]
    assert len(named) == 1
    owner.locator("tr[data-name=reload-dup]").get_by_role("button", name="Rotate").click()
    rotated = owner.locator("#new-token").inner_text().strip()
    assert rotated.startswith("egm_") and rotated != token
    owner.reload()
    assert rotated not in owner.content()
    auth = {"Authorization": f"Bearer {rotated}"}
    assert httpx.get(f"{site.url}/api/v1/facts", headers=auth).status_code == 200


def test_a_form_without_its_csrf_token_is_refused(owner: Page, site: Site) -> None:
    owner.goto("/ui/memories")
    before = site.engram.memories.list_memories(LOCAL, None).total
    bare = owner.request.post("/ui/memories", form={"content": "smuggled in"})
    wrong = owner.request.post("/ui/memories", form={"content": "smuggled", "csrf": "guess"})
    assert bare.status == wrong.status == 403
    assert "CSRF" in bare.text()
    assert site.engram.memories.list_memories(LOCAL, None).total == before
    ok = owner.request.post(
        "/ui/memories", form={"content": "Sent with the token", "csrf": _csrf(owner)}
    )
    assert ok.ok and site.engram.memories.list_memories(LOCAL, None).total == before + 1


def test_a_reader_sees_no_edit_controls_and_gets_403_posting(browser: Browser, site: Site) -> None:
    context = _context(browser, site, viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = _page(context, site)
    shared = site.engram.memories.add(
        NewMemory(content="The team standup is at 9:30"), LOCAL, site.shared_env
    )
    _sign_in(page, "rita", READER_PASSWORD)
    expect(page.get_by_role("heading", name="Memories")).to_be_visible()
    page.wait_for_load_state("load")  # app.js (deferred) submits the switcher on change
    page.get_by_label("Environment").select_option(site.shared_env)  # submits on change
    expect(page.locator(".role")).to_have_text("reader")
    expect(page.get_by_role("link", name="The team standup is at 9:30")).to_be_visible()
    assert page.get_by_text("Add a memory").count() == 0
    _shot(page, "phone-dark-reader")
    page.get_by_role("link", name="The team standup is at 9:30").click()
    expect(page.locator("#memory-content")).to_have_text("The team standup is at 9:30")
    for control in ("#edit-memory", "form[action$=delete]", "form[action$=purge]"):
        assert page.locator(control).count() == 0
    csrf = _csrf(page)
    edit = page.request.post(
        f"/ui/memories/{shared.id}/edit",
        form={"csrf": csrf, "content": "hijacked", "category": "general"},
    )
    add = page.request.post("/ui/memories", form={"csrf": csrf, "content": "mine now"})
    assert edit.status == add.status == 403
    assert site.engram.memories.get(shared.id, LOCAL).content == "The team standup is at 9:30"
    # sign out everywhere ends this session in every browser
    page.goto("/ui/keys")
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page).to_have_url(re.compile(r"/ui/login"))
    page.goto("/ui/memories")
    expect(page).to_have_url(re.compile(r"/ui/login"))
    context.close()


def test_api_docs_load_offline_and_nothing_left_the_origin(owner: Page, site: Site) -> None:
    owner.goto("/docs")
    # the spec is built on first request: give a loaded machine time
    expect(owner.locator(".swagger-ui .info .title")).to_contain_text("Engram", timeout=60_000)
    expect(owner.locator(".opblock-tag").first).to_be_visible()
    assert site.foreign == []
    assert site.csp_errors == []
