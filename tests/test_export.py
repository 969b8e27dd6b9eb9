"""Exports opened with reader libraries (openpyxl, python-docx, pypdf, pdftoppm), and the
archive round trip: export, restore into an empty home, export again: byte-identical."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import docx
import openpyxl
import pypdf
import pytest

from engram import LOCAL, Engram
from engram.errors import Conflict, InvalidInput, MissingDependency, NotFound
from engram.models import (
    EpisodeDetails,
    Layer,
    MemoryFilter,
    MemoryPatch,
    NewMemory,
    ProcedureDetails,
    Status,
)
from engram.portability.reading import read_input
from engram.store.providers import ProviderRecord
from engram.store.sqlite import SQLiteStore
from tests import export_fixtures as fx


def _seed(engram: Engram, tmp_path: Path) -> None:
    engram.environments.create("work", LOCAL, "Day job")
    a = engram.memories.add(
        NewMemory(content="Prefers tabs, width 4", category="preference"), LOCAL
    )
    engram.memories.update(a.id, MemoryPatch(content="Prefers tabs, width 2"), LOCAL)
    engram.memories.add(
        NewMemory(content="Deploys on Fridays are banned", category="decision"), LOCAL, "work"
    )
    engram.memories.add(
        NewMemory(layer=Layer.EPISODE, content="Debugged the flaky CI job"), LOCAL, "work"
    )
    engram.imports.commit(engram.imports.read(fx.chatgpt_export(tmp_path / "c.zip")), LOCAL)
    engram.soul.set_block("communication_style", LOCAL, text="Be brief and direct.")
    engram.soul.snapshot(LOCAL, label="before")
    engram.handoffs.begin("Login refactor half done", LOCAL, next_steps=["move tokens to Redis"])
    engram.profile.set_learning(LOCAL, enabled=True)
    engram.profile.add("Prefer uv over pip", LOCAL)
    engram.store.providers.put_provider(
        ProviderRecord(
            name="local-llm",
            kind="openai",
            base_url="http://127.0.0.1:11434/v1",
            model="llama3",
            encrypted_key=b"ciphertext stays with the home",
            timeout=30.0,
            created_at=datetime(2026, 1, 2, tzinfo=UTC),
        )
    )


def test_memories_in_every_format(engram: Engram, tmp_path: Path) -> None:
    _seed(engram, tmp_path)
    data = json.loads(engram.exports.memories("json", LOCAL))
    tabs = next(m for m in data["memories"] if m["content"] == "Prefers tabs, width 2")
    assert [v["snapshot"]["content"] for v in tabs["versions"]] == [
        "Prefers tabs, width 4",
        "Prefers tabs, width 2",
    ]
    md = engram.exports.memories("markdown", LOCAL).decode()
    assert "## work" in md and "### Episodes" in md and "Deploys on Fridays are banned" in md

    book = openpyxl.load_workbook(io.BytesIO(engram.exports.memories("xlsx", LOCAL)))
    rows = list(book["memories"].iter_rows(values_only=True))
    header = rows[0]
    assert {"id", "content", "category", "importance", "created_at"} <= set(header)
    contents = [r[header.index("content")] for r in rows[1:]]
    assert "Deploys on Fridays are banned" in contents
    history = list(book["history"].iter_rows(values_only=True))
    assert ("Prefers tabs, width 4" in [h[6] for h in history]) and len(history) > len(rows)

    document = docx.Document(io.BytesIO(engram.exports.memories("docx", LOCAL)))
    text = [p.text for p in document.paragraphs]
    assert "work" in text and "Facts" in text
    assert any(t.startswith("Deploys on Fridays are banned") and "decision" in t for t in text)

    pdf = engram.exports.memories("pdf", LOCAL, "work")
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    page_text = " ".join(page.extract_text() for page in reader.pages)
    assert "Deploys on Fridays are banned" in page_text and "Prefers tabs" not in page_text
    _render(pdf, tmp_path)


def _render(pdf: bytes, tmp_path: Path) -> None:
    """pdftoppm turns page 1 into a PNG: it is a real document."""
    assert shutil.which("pdftoppm"), "pdftoppm (poppler-utils) is needed; scripts/test installs it"
    (tmp_path / "out.pdf").write_bytes(pdf)
    subprocess.run(
        [
            "pdftoppm",
            "-png",
            "-r",
            "40",
            "-f",
            "1",
            "-l",
            "1",
            str(tmp_path / "out.pdf"),
            str(tmp_path / "page"),
        ],
        check=True,
    )
    png = next(tmp_path.glob("page*.png")).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 500


def test_filters_and_conversations_and_soul(engram: Engram, tmp_path: Path) -> None:
    _seed(engram, tmp_path)
    only = json.loads(
        engram.exports.memories("json", LOCAL, "work", MemoryFilter(categories=["decision"]))
    )
    assert [m["content"] for m in only["memories"]] == ["Deploys on Fridays are banned"]
    md = engram.exports.conversations("markdown", LOCAL).decode()
    assert "## Editor setup" in md and "Noted: tabs, width 4." in md
    assert "OLD BRANCH" not in md
    text = " ".join(
        p.text
        for p in docx.Document(io.BytesIO(engram.exports.conversations("docx", LOCAL))).paragraphs
    )
    assert "PostgreSQL it is." in text
    pdf = pypdf.PdfReader(io.BytesIO(engram.exports.conversations("pdf", LOCAL)))
    assert "billing service" in " ".join(p.extract_text() for p in pdf.pages)
    soul = json.loads(engram.exports.soul("json", LOCAL))
    assert "Be brief and direct." in json.dumps(soul)
    assert "Be brief and direct." in engram.exports.soul("markdown", LOCAL).decode()
    with pytest.raises(InvalidInput, match="formats are json, markdown, xlsx, docx, pdf"):
        engram.exports.memories("odt", LOCAL)


def test_archive_round_trip_is_byte_identical(engram: Engram, tmp_path: Path) -> None:
    _seed(engram, tmp_path)
    first = engram.archive.export(LOCAL)
    (tmp_path / "a.zip").write_bytes(first)
    entries = read_input(tmp_path / "a.zip")
    fresh = Engram(SQLiteStore(tmp_path / "fresh.db"))
    try:
        report = fresh.archive.restore(entries, LOCAL)
        assert all(report.checks.values()), report.checks
        assert report.counts["settings"] == 1  # the home's settings come along
        # and the user's work and habits: the open handoff, the profile and its opt-in
        # (before, the archive left them out and still said "restored and verified")
        (left,) = engram.store.handoffs.find(visible_to=None, limit=10)
        assert fresh.store.handoffs.get(left.id) == left  # open, as it was
        assert [e.text for e in fresh.store.profile.list_entries(LOCAL.user_id)] == [
            "Prefer uv over pip"
        ]
        assert fresh.store.profile.learning(LOCAL.user_id)
        provider = fresh.store.providers.get_provider("local-llm")
        assert provider is not None and provider.model == "llama3"
        assert provider.encrypted_key is None  # the API key stays with the home
        assert report.counts["memories"] == engram.store.count(MemoryFilter(statuses=list(Status)))
        second = fresh.archive.export(LOCAL)
        with pytest.raises(Conflict, match="not empty"):
            fresh.archive.restore(entries, LOCAL)
        # restoring again with force adds nothing
        fresh.archive.restore(entries, LOCAL, force=True)
        third = fresh.archive.export(LOCAL)
    finally:
        fresh.close()
    for later in (second, third):
        a, b = zipfile.ZipFile(io.BytesIO(first)), zipfile.ZipFile(io.BytesIO(later))
        for name in a.namelist():
            if name != "manifest.json":
                assert a.read(name) == b.read(name), name
        ma, mb = json.loads(a.read("manifest.json")), json.loads(b.read("manifest.json"))
        assert ma["collections"] == mb["collections"]
    assert (
        json.loads(zipfile.ZipFile(io.BytesIO(first)).read("manifest.json"))["collections"][
            "memories"
        ]["count"]
        > 5
    )


def test_a_damaged_archive_is_refused(engram: Engram, tmp_path: Path) -> None:
    _seed(engram, tmp_path)
    src = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL)))
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        for name in src.namelist():
            body = src.read(name)
            z.writestr(
                name, body.replace(b"Fridays", b"Mondays") if name == "memories.jsonl" else body
            )
    fresh = Engram(SQLiteStore(tmp_path / "fresh.db"))
    try:
        with pytest.raises(InvalidInput, match=r"memories\.jsonl: checksum does not match"):
            fresh.archive.restore(read_input(bad), LOCAL)
        assert fresh.store.list_environments() == []
    finally:
        fresh.close()


def test_account_archive_holds_only_that_account(engram: Engram, tmp_path: Path) -> None:
    _seed(engram, tmp_path)
    engram.environments.create("bobs", LOCAL.__class__("bob", "local"))
    data = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL, account="local")))
    envs = [json.loads(line) for line in data.read("environments.jsonl").splitlines()]
    assert {e["owner"] for e in envs} == {"local"}


def test_an_account_archive_holds_only_the_handoffs_that_account_may_read(
    engram: Engram,
) -> None:
    """In an environment shared with Alice, Bob's handoff to himself is not hers to read (the
    handoff list does not show it to her): her --account archive leaves it out, and keeps
    her own and the one Bob left for her; its audit log is hers alone (walkthrough 34: it held
    Bob's sharing and his writes in the shared environment)."""
    from engram.accounts import Role
    from engram.actors import Actor

    bob = Actor(engram.accounts.create_user("bob", LOCAL).id, "api")
    alice = Actor(engram.accounts.create_user("alice", LOCAL).id, "api")
    shared = engram.environments.create("webapp", bob)
    engram.environments.share(shared.id, alice.user_id, Role.WRITER, bob)
    engram.handoffs.begin("Bob's private next steps", bob, environment=shared.id)
    engram.handoffs.begin("For Alice", bob, environment=shared.id, for_user="alice")
    engram.handoffs.begin("Alice's own", alice, environment="bob/webapp")
    data = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL, account=alice.user_id)))
    rows = [json.loads(line) for line in data.read("handoffs.jsonl").splitlines()]
    assert sorted(r["summary"] for r in rows) == ["Alice's own", "For Alice"]
    whole = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL)))
    assert len(whole.read("handoffs.jsonl").splitlines()) == 3
    # nor what Bob did there: her audit entries only, as her own audit log shows them
    engram.memories.add(NewMemory(content="Bob's note"), bob, shared.id)
    engram.memories.add(NewMemory(content="Alice's note"), alice, "bob/webapp")
    data = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL, account=alice.user_id)))
    audit = [json.loads(line) for line in data.read("audit.jsonl").splitlines()]
    assert audit and {a["user_id"] for a in audit} == {alice.user_id}


def test_an_account_archive_names_the_account_by_id_or_name(engram: Engram, tmp_path: Path) -> None:
    """`engram init` says 'sign in as root' and `users list` shows the name: the name works
    for --account as the id does."""
    _seed(engram, tmp_path)
    owner, _ = engram.accounts.ensure_owner("root")
    by_id = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL, account=owner.id)))
    by_name = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL, account="root")))
    for name in ("environments.jsonl", "memories.jsonl"):
        assert by_name.read(name) == by_id.read(name) and by_id.read(name)
    assert json.loads(by_name.read("manifest.json"))["scope"] == f"account:{owner.id}"
    with pytest.raises(NotFound):
        engram.archive.export(LOCAL, account="nobody")


def test_restoring_into_an_initialised_home_says_what_to_do_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`engram init` makes a 'default' environment of its own: the archive's 'default' cannot
    join it. Refused in one line that says how to restore, --force names the clash, and
    neither writes anything (before: a raw UNIQUE constraint error after the users had been
    written)."""
    from engram.cli import main

    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    assert main(["--home", src, "init"]) == 0
    assert main(["--home", src, "add", "Prefers pnpm over npm"]) == 0
    archive = str(tmp_path / "all.zip")
    assert main(["--home", src, "export", archive, "--archive"]) == 0
    assert main(["--home", dst, "init"]) == 0
    assert main(["--home", dst, "export", str(tmp_path / "before.zip"), "--archive"]) == 0
    capsys.readouterr()
    assert main(["--home", dst, "import", archive]) == 1
    err = capsys.readouterr().err.strip()
    assert "not empty (1 environment, 0 memories)" in err and "--home NEW_DIR" in err
    assert "--force" in err and len(err.splitlines()) == 1
    assert main(["--home", dst, "import", archive, "--force"]) == 1
    err = capsys.readouterr().err.strip()
    assert "'default' of local exists here with another id: nothing restored" in err
    assert "UNIQUE" not in err
    assert main(["--home", dst, "export", str(tmp_path / "after.zip"), "--archive"]) == 0
    before = zipfile.ZipFile(tmp_path / "before.zip")
    after = zipfile.ZipFile(tmp_path / "after.zip")
    for name in before.namelist():
        if name != "manifest.json":
            assert before.read(name) == after.read(name), name
    # a home never initialised takes it whole
    assert main(["--home", str(tmp_path / "new"), "import", archive]) == 0
    assert "restored and verified" in capsys.readouterr().out


def test_document_exports_keep_procedure_and_episode_details(engram: Engram) -> None:
    """A procedure is its steps and an episode its decisions: Markdown, DOCX and PDF print
    them under the memory (they printed only the content)."""
    engram.memories.add(
        NewMemory(
            layer=Layer.PROCEDURE,
            content="Cut a release",
            procedure=ProcedureDetails(
                name="release", trigger="before tagging", steps=["bump version", "tag", "push"]
            ),
        ),
        LOCAL,
    )
    engram.memories.add(
        NewMemory(
            layer=Layer.EPISODE,
            content="Debugged the flaky upload test",
            episode=EpisodeDetails(
                participants=["Ana", "Claude Code"],
                key_decisions=["retry uploads twice"],
                open_questions=["why only on CI?"],
            ),
        ),
        LOCAL,
    )
    md = engram.exports.memories("markdown", LOCAL).decode()
    docx_text = "\n".join(
        p.text for p in docx.Document(io.BytesIO(engram.exports.memories("docx", LOCAL))).paragraphs
    )
    pdf = pypdf.PdfReader(io.BytesIO(engram.exports.memories("pdf", LOCAL)))
    pdf_text = " ".join(page.extract_text() for page in pdf.pages)
    for text in (md, docx_text, pdf_text):
        for expected in (
            "procedure: release",
            "when: before tagging",
            "1. bump version",
            "3. push",
            "participants: Ana; Claude Code",
            "decisions: retry uploads twice",
            "open questions: why only on CI?",
        ):
            assert expected in " ".join(text.split()), (expected, text)


def test_a_forced_restore_of_a_malformed_record_is_refused_naming_it(
    engram: Engram, tmp_path: Path
) -> None:
    """An archive whose checksums match but whose environment line is not a record: the
    collection is named, no traceback."""
    _seed(engram, tmp_path)
    source = zipfile.ZipFile(io.BytesIO(engram.archive.export(LOCAL)))
    manifest = json.loads(source.read("manifest.json"))
    info = manifest["collections"]["environments"]
    lines = source.read(info["file"]) + b"1\n"
    info.update(count=info["count"] + 1, sha256=hashlib.sha256(lines).hexdigest())
    path = tmp_path / "crafted.zip"
    with zipfile.ZipFile(path, "w") as out:
        for name in source.namelist():
            if name != "manifest.json":
                out.writestr(name, lines if name == info["file"] else source.read(name))
        out.writestr("manifest.json", json.dumps(manifest))
    fresh = Engram(SQLiteStore(tmp_path / "fresh.db"))
    try:
        with pytest.raises(InvalidInput, match="archive collection 'environments'"):
            fresh.archive.restore(read_input(path), LOCAL, force=True)
    finally:
        fresh.close()


def test_a_missing_extra_is_named_with_the_checkout_install_not_pypi_engram(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'engram' on PyPI is another project: the hint installs the extra from the checkout.
    Before: "pip install 'engram[export]'", which installs someone else's package."""
    monkeypatch.setitem(sys.modules, "docx", None)  # python-docx not installed
    with pytest.raises(MissingDependency) as caught:
        engram.exports.memories("docx", LOCAL)
    message = caught.value.message
    assert "scripts/install --extras export" in message and "'.[export]'" in message
    assert "engram[" not in message


def test_exports_are_written_owner_only(tmp_path: Path) -> None:
    """An archive holds every user's memories, conversations and the audit log; an --account
    one is a person's data-protection export: 0600 whatever the umask (before: 0644 under the
    usual 022, readable by every local user), as a backup is."""
    from engram.cli import main

    home = str(tmp_path / "h")
    assert main(["--home", home, "add", "Prefers pnpm over npm"]) == 0
    old = os.umask(0o022)
    try:
        for name, flags in (("all.zip", ["--archive"]), ("m.json", [])):
            assert main(["--home", home, "export", str(tmp_path / name), *flags]) == 0
            assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name
    finally:
        os.umask(old)
