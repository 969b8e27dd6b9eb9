"""The dashboard's other screens in process (the browser flows are in test_web.py), on both
backends: captured sessions with scrubbed observations, export downloads, environments and
sharing, users, the audit log, delete/purge with confirmation, and errors as pages."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engram import LOCAL, Engram
from engram.accounts import Role
from engram.actors import Actor
from engram.api import ServerSettings
from engram.handoffs import HandoffState
from engram.models import NewMemory
from engram.servers import http_app
from engram.web import live
from tests import export_fixtures as fx
from tests.access_world import Caller, World

pytestmark = pytest.mark.slow  # Argon2id hashes each sign-in (about 0.5 s apiece under load)
PASSWORD = "a long password"


class Browser:
    """A signed-in TestClient that reads each page's CSRF token."""

    def __init__(self, engram: Engram, name: str, password: str = PASSWORD) -> None:
        self.client = TestClient(http_app(engram, ServerSettings()), base_url="http://127.0.0.1")
        page = self.client.get("/ui/login")
        signed = self.client.post(
            "/ui/login",
            data={"name": name, "password": password, "csrf": self._token(page.text)},
            follow_redirects=False,
        )
        assert signed.status_code == 303, signed.text
        self.csrf = self._token(self.client.get("/ui/memories").text)

    @staticmethod
    def _token(html: str) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', html)
        assert found, html
        return found.group(1)

    def get(self, path: str) -> str:
        r = self.client.get(path)
        assert r.status_code == 200, r.text
        return r.text

    def post(self, path: str, **data: str) -> tuple[int, str]:
        r = self.client.post(path, data={"csrf": self.csrf, **data})
        return r.status_code, r.text


@pytest.fixture
def owner(engram: Engram) -> Browser:
    user, _ = engram.accounts.ensure_owner("owner")
    engram.accounts.set_password(user.id, PASSWORD, LOCAL)
    return Browser(engram, "owner")


def test_captured_session_with_scrubbed_observations(engram: Engram, owner: Browser) -> None:
    at = datetime.now(UTC).isoformat()
    secret = "sk-" + "a1B2c3D4" * 6
    events = [
        {
            "agent": "claude",
            "kind": kind,
            "session_id": "s-web",
            "cwd": "/work/webapp",
            "at": at,
            "key": f"web-event-{i:04d}",
            "project": "webapp",
            **fields,
        }
        for i, (kind, fields) in enumerate(
            [
                ("prompt", {"text": "Fix the flaky login test"}),
                ("tool_result", {"tool": "Bash", "command": f"export KEY={secret}"}),
            ]
        )
    ]
    engram.capture.ingest(events, LOCAL)
    assert 'data-session="' not in owner.get("/ui/sessions")  # in the project's environment
    assert owner.post("/ui/environments/switch", environment="webapp")[0] == 200
    listed = owner.get("/ui/sessions")
    [sid] = re.findall(r'data-session="([^"]+)"', listed)
    page = owner.get(f"/ui/sessions/{sid}")
    assert "Fix the flaky login test" in page and "export KEY=" in page
    assert secret not in page  # scrubbed on the way in
    found = owner.get("/ui/sessions?q=flaky")
    assert "1 observation(s)" in found
    status, page = owner.post(f"/ui/sessions/{sid}/summarize")
    assert status == 200 and "summarized" in page


def test_export_downloads(engram: Engram, owner: Browser) -> None:
    engram.memories.add(NewMemory(content="Ship the beta on Monday"), LOCAL)
    r = owner.client.post(
        "/ui/transfer/export", data={"csrf": owner.csrf, "what": "memories", "fmt": "json"}
    )
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    assert "Ship the beta on Monday" in json.dumps(r.json())
    md = owner.client.post(
        "/ui/transfer/export", data={"csrf": owner.csrf, "what": "soul", "fmt": "markdown"}
    )
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
    status, page = owner.post("/ui/transfer/export", what="soul", fmt="pdf")
    assert status == 422 and "soul exports as json, markdown" in page


def test_environments_users_and_roles(engram: Engram, owner: Browser) -> None:
    status, page = owner.post("/ui/users", name="rita", password=PASSWORD)
    assert status == 200 and "created rita" in page
    rita = next(u for u in engram.accounts.list_users(LOCAL) if u.name == "rita")
    status, page = owner.post("/ui/environments", name="team")
    assert status == 200 and "created team" in page
    status, page = owner.post("/ui/environments/members", user_id=rita.id, role="reader")
    assert status == 200 and f'rita <code class="dim">{rita.id}</code> — reader' in page
    team = engram.environments.resolve("team", LOCAL)
    memory = engram.memories.add(NewMemory(content="Standup at 9:30"), LOCAL, team.id)
    reader = Browser(engram, "rita")
    status, _ = reader.post("/ui/environments/switch", environment=team.id)
    assert status == 200
    page = reader.get(f"/ui/memories/{memory.id}")
    assert "Standup at 9:30" in page and 'id="edit-memory"' not in page
    assert reader.post(f"/ui/memories/{memory.id}/delete")[0] == 403
    assert reader.post("/ui/users", name="mallory", password=PASSWORD)[0] == 403
    # a reader's own password needs the current one (named by id or by name), and signs them
    # out everywhere
    assert reader.post(f"/ui/users/{rita.id}/password", password="x" * 12)[0] == 401
    assert reader.post("/ui/users/rita/password", password="x" * 12)[0] == 401
    assert reader.post("/ui/users/owner/password", password="x" * 12)[0] == 404
    status, _ = reader.post(f"/ui/users/{rita.id}/password", password="y" * 12, current=PASSWORD)
    assert status == 200
    assert reader.client.get("/ui/memories", follow_redirects=False).status_code == 303
    assert engram.accounts.verify_password("rita", "y" * 12).id == rita.id
    # an admin names the user by name too (AccountService.find_user)
    status, page = owner.post("/ui/users/rita/password", password="z" * 12)
    assert status == 200 and "password set for rita" in page
    assert engram.accounts.verify_password("rita", "z" * 12).id == rita.id
    audit = owner.get("/ui/audit?action=environment.")
    assert "environment.share" in audit or "environment.create" in audit


def test_delete_purge_with_confirmation_and_error_pages(engram: Engram, owner: Browser) -> None:
    memory = engram.memories.add(NewMemory(content="A note to purge"), LOCAL)
    status, page = owner.post(f"/ui/memories/{memory.id}/delete")
    assert status == 200 and "deleted (restorable)" in page and "Bring back" in page
    status, page = owner.post(f"/ui/memories/{memory.id}/purge", confirm="yes")
    assert status == 422 and "type the memory&#39;s id" in page
    assert engram.memories.get(memory.id, LOCAL).content == "A note to purge"
    status, page = owner.post(f"/ui/memories/{memory.id}/purge", confirm=memory.id)
    assert status == 200 and "purged" in page
    missing = owner.client.get(f"/ui/memories/{memory.id}")
    assert missing.status_code == 404 and "does not exist" in missing.text
    assert missing.headers["content-type"].startswith("text/html")
    bad = owner.client.get("/ui/memories?layer=nonsense")
    assert bad.status_code == 422 and "layers" in bad.text


def test_an_import_preview_says_why_a_row_is_skipped(owner: Browser) -> None:
    """'1 skipped' came with no row and no reason (walkthrough 32, finding 17)."""
    csv = (
        b"content,category,importance\n"
        b'"CSV: the VPN config lives in 1Password",project,0.7\n'
        b'"CSV: bad row",project,7\n'
    )
    r = owner.client.post(
        "/ui/transfer/import",
        data={"csrf": owner.csrf},
        files={"file": ("walk.csv", csv, "text/csv")},
    )
    assert r.status_code == 200 and "1 skipped" in r.text
    assert "skipped row 3: importance: Input should be less than or equal to 1" in r.text
    assert "/imports/" not in r.text and "/uploads/" not in r.text


def test_import_runs_in_the_background_with_progress(
    engram: Engram, owner: Browser, tmp_path: Path
) -> None:
    export = fx.chatgpt_export(tmp_path / "chatgpt.zip", extra=30)
    with export.open("rb") as f:
        r = owner.client.post(
            "/ui/transfer/import",
            data={"csrf": owner.csrf},
            files={"file": ("chatgpt.zip", f, "application/zip")},
        )
    assert r.status_code == 200 and 'id="import-preview"' in r.text
    [upload_id] = re.findall(r'name="upload_id" value="([^"]+)"', r.text)
    started = owner.client.post(
        "/ui/transfer/commit",
        data={"csrf": owner.csrf, "upload_id": upload_id},
        follow_redirects=False,
    )
    assert started.status_code == 303
    job = started.headers["location"]
    deadline = time.monotonic() + 60
    seen = []
    while True:
        page = owner.get(job)
        seen.append('http-equiv="refresh"' in page)
        if 'id="import-report"' in page:
            break
        assert time.monotonic() < deadline, page
        time.sleep(0.05)
    assert "Imported chatgpt.zip: 32 conversation(s)" in page
    assert seen[-1] is False  # a finished import stops reloading
    # the upload is gone once committed; a job is the uploader's alone
    again = owner.client.post(
        "/ui/transfer/commit", data={"csrf": owner.csrf, "upload_id": upload_id}
    )
    assert again.status_code == 404 and "upload the file again" in again.text
    assert engram.memories.list_memories(LOCAL, None).total > 0


def test_handoff_inbox_accepts_through_the_form(engram: Engram, owner: Browser) -> None:
    rita = engram.accounts.create_user("rita", LOCAL)
    theirs = engram.handoffs.begin("Rita's private notes", Actor(rita.id, "local"))
    mine = engram.handoffs.begin("Half-way through the login fix", LOCAL, from_agent="claude")
    page = owner.get("/ui/handoffs")
    assert f'data-handoff="{mine.id}"' in page and "Half-way through the login fix" in page
    assert "claude" in page and f'action="/ui/handoffs/{mine.id}/accept"' in page
    assert theirs.id not in page and "Rita&#39;s private notes" not in page
    status, page = owner.post(f"/ui/handoffs/{mine.id}/accept")
    assert status == 200 and f"accepted {mine.id}" in page
    row = page.split(f'data-handoff="{mine.id}"')[1].split("</tr>")[0]
    assert "accepted" in row and "you in web" in row and "/accept" not in row
    assert engram.handoffs.get(mine.id, LOCAL).state is HandoffState.ACCEPTED
    status, page = owner.post(f"/ui/handoffs/{mine.id}/accept")  # claimed exactly once
    assert status == 409 and "already accepted" in page
    assert owner.post(f"/ui/handoffs/{theirs.id}/accept")[0] == 404  # not even visible
    assert engram.handoffs.get(theirs.id, Actor(rita.id, "local")).state is HandoffState.OPEN
    other = engram.handoffs.begin("Never mind this one", LOCAL)
    status, page = owner.post(f"/ui/handoffs/{other.id}/cancel")
    assert status == 200 and engram.handoffs.get(other.id, LOCAL).state is HandoffState.CANCELLED
    # one left for Rita (who can open the project) says for whom, and offers no Accept to
    # its author, only Cancel (before: an Accept that answered 403)
    engram.environments.share("default", rita.id, Role.WRITER, LOCAL)
    for_rita = engram.handoffs.begin("For Rita", LOCAL, for_user="rita")
    row = owner.get("/ui/handoffs").split(f'data-handoff="{for_rita.id}"')[1].split("</tr>")[0]
    assert "for rita" in row and "/accept" not in row and "/cancel" in row


def test_oauth_grants_listed_and_revoked_on_the_keys_page(engram: Engram, owner: Browser) -> None:
    rita = engram.accounts.create_user("rita", LOCAL, password=PASSWORD)
    world = World(engram, LOCAL, "", "", "", "")
    mine = world.grant(Caller("owner", LOCAL.user_id, Role.OWNER, frozenset()))
    theirs = world.grant(Caller("rita", rita.id, Role.OWNER, frozenset()))
    page = owner.get("/ui/keys")
    row = page.split(f'data-grant="{mine}"')[1].split("</tr>")[0]
    assert "active" in row and f'action="/ui/grants/{mine}/revoke"' in row
    assert theirs not in page  # the page lists the viewer's own grants only
    status, page = owner.post(f"/ui/grants/{mine}/revoke")
    assert status == 200 and "revoked the grant of" in page
    row = page.split(f'data-grant="{mine}"')[1].split("</tr>")[0]
    assert "revoked" in row and "/revoke" not in row
    assert engram.oauth.get_grant(mine, LOCAL).revoked_at is not None
    reader = Browser(engram, "rita")  # not an admin: another user's grant does not exist
    listed = reader.get("/ui/keys")
    assert f'data-grant="{theirs}"' in listed and mine not in listed
    assert reader.post(f"/ui/grants/{mine}/revoke")[0] == 404
    assert engram.oauth.get_grant(theirs, LOCAL).revoked_at is None


def test_live_capture_shows_the_newest_observations_and_reloads(
    engram: Engram, owner: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "PAGE", 2)  # page through the sessions' observations
    start = datetime.now(UTC)

    def event(i: int, session: str, project: str, text: str) -> dict[str, str]:
        at = (start + timedelta(seconds=i)).isoformat()
        return {
            "agent": "claude",
            "kind": "prompt",
            "session_id": session,
            "cwd": f"/work/{project}",
            "at": at,
            "key": f"live-{i:04d}",
            "project": project,
            "text": text,
        }

    texts = [f"step number {i}" for i in range(5)]
    events = [event(i, f"s-{i % 2}", "webapp", t) for i, t in enumerate(texts)]
    events.append(event(9, "s-other", "elsewhere", "not in this project"))
    engram.capture.ingest(events, LOCAL)
    assert owner.post("/ui/environments/switch", environment="webapp")[0] == 200
    page = owner.get("/ui/live")
    assert '<meta http-equiv="refresh"' in page
    shown = re.findall(r"class=\"snippet\">step number (\d)", page)
    assert shown == ["4", "3", "2", "1", "0"]  # newest first, across both sessions
    assert "not in this project" not in page
    paused = owner.get("/ui/live?paused=true")
    assert 'http-equiv="refresh"' not in paused and "step number 4" in paused
