"""REST import jobs on a live server, on both backends: upload and preview, commit in the
background with progress as Server-Sent Events and a status, the same ledger as the CLI (a
repeat adds nothing, an interrupted job resumes), refusals that keep nothing, per-user jobs,
and the SDK's calls."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engram import LOCAL, Engram
from engram.accounts import Scope
from engram.api import ServerSettings, create_app
from engram.errors import InvalidInput, NotFound
from engram.models import MemoryFilter
from engram.portability.report import ImportJob, JobState
from engram.sdk import Client
from engram.service.import_jobs import ImportJobs
from tests import export_fixtures as fx
from tests.live_server import running
from tests.scrub_fixtures import fakes

WAIT = 60.0


@pytest.fixture
def server(engram: Engram) -> Iterator[tuple[str, str]]:
    """A live server over the test's store (auth on); yields (URL, the owner's token)."""
    engram.accounts.ensure_owner("owner")
    token = engram.accounts.issue_key(LOCAL, "t", (Scope.READ, Scope.WRITE, Scope.ADMIN)).token
    with running(lambda port: create_app(engram, ServerSettings(port=port))) as url:
        yield url, token


def _client(server: tuple[str, str], token: str | None = None) -> httpx.Client:
    url, owner = server
    return httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {token or owner}"}, timeout=WAIT
    )


def _events(c: httpx.Client, job_id: str) -> list[tuple[str, dict[str, object]]]:
    out = []
    with c.stream("GET", f"/api/v1/imports/{job_id}/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        kind = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                out.append((kind, json.loads(line.removeprefix("data: "))))
    return out


def test_upload_preview_commit_with_events(
    engram: Engram, server: tuple[str, str], tmp_path: Path
) -> None:
    data = fx.chatgpt_export(tmp_path / "chatgpt.zip", extra=30).read_bytes()
    with _client(server) as c:
        r = c.post("/api/v1/imports", params={"filename": "chatgpt.zip"}, content=data)
        assert r.status_code == 201, r.text
        job = ImportJob.model_validate(r.json())
        assert job.state is JobState.PREVIEWED and job.preview.formats == ["chatgpt"]
        assert job.preview.sources[0].conversations == 32 and job.total == 3 + 66
        assert engram.store.count(MemoryFilter()) == 0  # a preview stores nothing
        r = c.post(f"/api/v1/imports/{job.id}/commit")
        assert r.status_code == 202 and r.json()["state"] == "running"
        events = _events(c, job.id)
        kinds = [k for k, _ in events]
        assert kinds[-1] == "done" and set(kinds[:-1]) <= {"progress"}, kinds
        done = [int(str(d["done"])) for _, d in events]
        assert done == sorted(done) and done[-1] == job.total
        final = ImportJob.model_validate(c.get(f"/api/v1/imports/{job.id}").json())
        assert final.state is JobState.DONE and final.report is not None
        assert final.report.conversations == 32 and final.report.messages_added == 66
        stored = engram.store.count(MemoryFilter())
        assert stored > 0
        assert c.post(f"/api/v1/imports/{job.id}/commit").status_code == 409  # done once
        # the same export again: the preview says it is all stored, and the commit adds nothing
        again = ImportJob.model_validate(
            c.post("/api/v1/imports", params={"filename": "again.zip"}, content=data).json()
        )
        assert again.preview.duplicates.conversations == 32
        assert again.preview.duplicates.memories == 3
        c.post(f"/api/v1/imports/{again.id}/commit")
        assert _events(c, again.id)[-1][0] == "done"
        report = c.get(f"/api/v1/imports/{again.id}").json()["report"]
        assert report["already_imported"] == 35 and report["messages_added"] == 0
        assert engram.store.count(MemoryFilter()) == stored
        assert [j["id"] for j in c.get("/api/v1/imports").json()] == [again.id, job.id]
        assert c.delete(f"/api/v1/imports/{job.id}").status_code == 200
        assert c.get(f"/api/v1/imports/{job.id}").status_code == 404


BAD_ROW_CSV = (
    b"content,category,importance\n"
    b'"CSV: the VPN config lives in 1Password",project,0.7\n'
    b'"CSV: bad row",project,7\n'
)


def test_a_preview_names_the_upload_never_the_servers_folder(
    engram: Engram, server: tuple[str, str]
) -> None:
    """A skipped row is named by the file as sent, with its reason; the server's data path
    is never in the answer (walkthrough 32, finding 17)."""
    with _client(server) as c:
        r = c.post("/api/v1/imports", params={"filename": "walk.csv"}, content=BAD_ROW_CSV)
        assert r.status_code in (200, 201), r.text
    preview = r.json()["preview"]
    assert preview["skipped_total"] == 1
    [skipped] = preview["skipped"]
    assert skipped["file"] == "walk.csv"
    assert skipped["reason"].startswith("row 3: importance: Input should be less than")
    assert str(engram.import_jobs.root) not in r.text and "/imports/imp_" not in r.text


def test_a_bad_upload_is_refused_and_nothing_kept(
    engram: Engram, server: tuple[str, str], tmp_path: Path
) -> None:
    with _client(server) as c:
        for name, body in (
            ("notes.json", b'{"hello": "world"}'),
            ("cut.zip", fx.chatgpt_export(tmp_path / "c.zip").read_bytes()[:-40]),
            ("bad.txt", b"\xff\xfe not utf-8 \xc3\x28"),
            ("empty.json", b""),
        ):
            r = c.post("/api/v1/imports", params={"filename": name}, content=body)
            assert r.status_code == 422, (name, r.text)
            assert name in r.json()["error"]["message"], r.text
            assert str(engram.import_jobs.root) not in r.text  # the server's folder unnamed
        assert c.get("/api/v1/imports").json() == []
        assert c.post("/api/v1/imports", params={"map": "x=nope"}, content=b"a").status_code == 422
        missing = "imp_" + "0" * 26
        assert c.get(f"/api/v1/imports/{missing}").status_code == 404
        assert c.get(f"/api/v1/imports/{missing}/events").status_code == 404
        assert c.post(f"/api/v1/imports/{missing}/commit").status_code == 404
    assert engram.store.count(MemoryFilter()) == 0


def test_jobs_are_their_owners(engram: Engram, server: tuple[str, str], tmp_path: Path) -> None:
    dana = engram.accounts.create_user("dana", LOCAL)
    token = engram.accounts.issue_key(LOCAL, "d", (Scope.READ, Scope.WRITE), user_id=dana.id)
    data = fx.chatgpt_export(tmp_path / "c.zip").read_bytes()
    with _client(server) as c:
        job = c.post("/api/v1/imports", content=data).json()
    with _client(server, token.token) as d:
        assert d.get(f"/api/v1/imports/{job['id']}").status_code == 404
        assert d.post(f"/api/v1/imports/{job['id']}/commit").status_code == 404
        assert d.get("/api/v1/imports").json() == []


def test_an_interrupted_job_resumes_without_duplicates(engram: Engram, tmp_path: Path) -> None:
    path = fx.chatgpt_export(tmp_path / "c.zip", extra=10)
    jobs = engram.import_jobs
    with path.open("rb") as f:
        job = jobs.upload("c.zip", f, LOCAL)
    # part of it stored, then the process stops (its job file still says running)
    bundle = engram.imports.read(path)

    def stop_half_way(done: int, total: int) -> None:
        if done > total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engram.imports.commit(bundle, LOCAL, progress=stop_half_way)
    running_job = job.model_copy(update={"state": JobState.RUNNING})
    jobs._save(running_job)  # what a process that died mid-commit leaves
    restarted = ImportJobs(engram.imports, engram.clock, jobs.root)
    seen = restarted.get(job.id, LOCAL)
    assert seen.state is JobState.FAILED and seen.error and "resume" in seen.error
    partial = engram.store.count(MemoryFilter())
    restarted.commit(job.id, LOCAL)
    restarted.wait(job.id, WAIT)
    final = restarted.get(job.id, LOCAL)
    assert final.state is JobState.DONE and final.report is not None
    assert final.report.already_imported > 0
    # nothing twice: the same as one clean import into a fresh environment
    engram.environments.create("fresh", LOCAL)
    engram.imports.commit(engram.imports.read(path), LOCAL, "fresh")
    fresh = engram.environments.resolve("fresh", LOCAL)
    default = engram.environments.resolve(None, LOCAL)
    assert engram.store.count(MemoryFilter(environment_ids=[default.id])) == engram.store.count(
        MemoryFilter(environment_ids=[fresh.id])
    )
    assert engram.store.count(MemoryFilter(environment_ids=[default.id])) >= partial


def test_a_failing_commit_is_reported_and_can_be_retried(engram: Engram, tmp_path: Path) -> None:
    path = fx.chatgpt_export(tmp_path / "c.zip")
    jobs = engram.import_jobs
    with path.open("rb") as f:
        job = jobs.upload("c.zip", f, LOCAL)
    # the upload is gone from under the job: the commit fails and says why
    (jobs.root / job.id / job.file).unlink()
    jobs.commit(job.id, LOCAL)
    jobs.wait(job.id, WAIT)
    failed = jobs.get(job.id, LOCAL)
    assert failed.state is JobState.FAILED and failed.error and "c.zip" in failed.error
    assert str(jobs.root) not in failed.error
    (jobs.root / job.id / job.file).write_bytes(path.read_bytes())
    jobs.commit(job.id, LOCAL)
    jobs.wait(job.id, WAIT)
    assert jobs.get(job.id, LOCAL).state is JobState.DONE


def test_the_preview_is_scrubbed_and_a_done_upload_not_kept(engram: Engram, tmp_path: Path) -> None:
    secret = fakes()[0]
    path = tmp_path / "memories.txt"
    path.write_text(f"[2026-01-05] - My deploy token is {secret.text}\n")
    with path.open("rb") as f:
        job = engram.import_jobs.upload("memories.txt", f, LOCAL)
    assert job.preview.sample and secret.tail not in job.preview.model_dump_json()
    assert secret.tail not in (engram.import_jobs.root / job.id / "job.json").read_text()
    engram.import_jobs.commit(job.id, LOCAL)
    engram.import_jobs.wait(job.id, WAIT)
    assert engram.import_jobs.get(job.id, LOCAL).state is JobState.DONE
    files = [p for p in (engram.import_jobs.root / job.id).iterdir()]
    assert [p.name for p in files] == ["job.json"]
    assert all(secret.tail not in p.read_text() for p in files)


def test_an_upload_into_an_unknown_environment_is_refused(engram: Engram, tmp_path: Path) -> None:
    path = fx.chatgpt_export(tmp_path / "c.zip")
    with path.open("rb") as f, pytest.raises(NotFound, match="nowhere"):
        engram.import_jobs.upload("c.zip", f, LOCAL, "nowhere")
    assert engram.import_jobs.list(LOCAL) == []
    with pytest.raises(InvalidInput, match="empty"), (tmp_path / "e").open("w+b") as empty:
        engram.import_jobs.upload("e.json", empty, LOCAL)


def test_sdk_uploads_and_commits(engram: Engram, server: tuple[str, str], tmp_path: Path) -> None:
    url, token = server
    data = fx.chatgpt_export(tmp_path / "c.zip").read_bytes()
    with Client(url, token) as c:
        job = c.imports.upload(data, "c.zip")
        assert job.state is JobState.PREVIEWED and job.preview.sources[0].conversations == 2
        assert c.imports.commit(job.id).state is JobState.RUNNING
        deadline = time.monotonic() + WAIT
        while (current := c.imports.get(job.id)).state is JobState.RUNNING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert current.state is JobState.DONE and current.report is not None
        assert [j.id for j in c.imports.list()] == [job.id]
        with pytest.raises(InvalidInput):
            c.imports.upload(b"{}", "x.json")


def test_an_upload_and_its_job_file_are_owner_only(engram: Engram, tmp_path: Path) -> None:
    """The upload is the export as sent (secrets not yet scrubbed): 0600 in 0700 folders, as
    every file in the home, whatever the umask."""
    root = tmp_path / "home" / "imports"
    jobs = ImportJobs(engram.imports, engram.clock, root)
    path = tmp_path / "memories.txt"
    path.write_text("[2026-01-05] - Prefers pnpm over npm\n")
    old = os.umask(0o022)
    try:
        with path.open("rb") as f:
            job = jobs.upload("memories.txt", f, LOCAL)
    finally:
        os.umask(old)
    modes = {
        p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in (root.parent, root, root / job.id, root / job.id / job.file)
    }
    modes["job.json"] = stat.S_IMODE((root / job.id / "job.json").stat().st_mode)
    assert modes == {
        "home": 0o700,
        "home/imports": 0o700,
        f"home/imports/{job.id}": 0o700,
        f"home/imports/{job.id}/memories.txt": 0o600,
        "job.json": 0o600,
    }
