"""Importing other products' exports through the service, on both backends: detection by
content, the visible ChatGPT branch, memory traces, Claude projects as environments, Gemini
grouping, agent transcripts, CSV; re-import adds nothing, an interrupted import resumes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram import LOCAL, Engram
from engram.errors import InvalidInput
from engram.models import Layer, MemoryFilter
from engram.portability.bundle import stable_key
from tests import export_fixtures as fx
from tests.scrub_fixtures import fakes


def test_chatgpt_zip_follows_the_visible_branch_and_keeps_traces(
    engram: Engram, tmp_path: Path
) -> None:
    path = fx.chatgpt_export(tmp_path / "chatgpt.zip")
    bundle = engram.imports.read(path)
    assert bundle.formats == ["chatgpt"]
    branch = next(c for c in bundle.conversations if c.key == "conv-branch")
    texts = [m.content for m in branch.messages]
    assert texts == [
        "I always use tabs, width 4, in Python.",
        "Noted: tabs, width 4.",
        "[image]\nWhat is in this screenshot?",
        "A terminal with a failing test.",
    ]
    assert branch.messages[2].created_at is None  # a missing timestamp is kept missing
    traces = {m.memory.content: m.memory.confidence for m in bundle.memories}
    assert traces == {
        "Prefers tabs with width 4 in Python.": 0.4,
        "About me: I am a backend developer in Lyon.": 0.4,
        "How to respond: Answer briefly.": 0.4,
    }
    skipped = {s.entry: s.reason for s in bundle.skipped}
    assert "file-abc.png" in skipped and "user.json" in skipped and "chat.html" in skipped


def test_sharded_chatgpt_export_reads_every_shard(engram: Engram, tmp_path: Path) -> None:
    bundle = engram.imports.read(fx.chatgpt_export(tmp_path / "c.zip", sharded=True))
    assert sorted(c.key for c in bundle.conversations) == ["conv-branch", "conv-db"]


def test_preview_then_commit_then_reimport_adds_nothing(engram: Engram, tmp_path: Path) -> None:
    path = fx.chatgpt_export(tmp_path / "chatgpt.zip")
    bundle = engram.imports.read(path)
    preview = engram.imports.preview(bundle, LOCAL, file=str(path))
    assert preview.duplicates.conversations == 0 and preview.duplicates.memories == 0
    src = {s.format: s for s in preview.sources}
    assert (src["chatgpt"].conversations, src["chatgpt"].messages, src["chatgpt"].memories) == (
        2,
        6,
        3,
    )
    assert preview.skipped_total == 3 and preview.sample
    assert engram.store.count(MemoryFilter()) == 0  # a preview stores nothing

    report = engram.imports.commit(bundle, LOCAL)
    assert report.conversations == 2 and report.messages_added == 6
    assert report.memories_created >= 3
    count = engram.store.count(MemoryFilter())
    # the same paths as live data: extraction found the decision in the second conversation
    contents = [m.content for m in engram.store.list_memories(MemoryFilter(), limit=100)]
    assert any("PostgreSQL" in c for c in contents)
    assert any(
        m.layer is Layer.EPISODE for m in engram.store.list_memories(MemoryFilter(), limit=100)
    )

    again = engram.imports.read(path)
    preview2 = engram.imports.preview(again, LOCAL)
    assert preview2.duplicates.conversations == 2 and preview2.duplicates.memories == 3
    assert preview2.duplicates.messages == 6
    report2 = engram.imports.commit(again, LOCAL)
    assert report2.already_imported == 5 and report2.messages_added == 0
    assert report2.memories_created == 0 and report2.memories_merged == 0
    assert engram.store.count(MemoryFilter()) == count


def test_a_later_export_adds_the_turns_of_a_continued_conversation(
    engram: Engram, tmp_path: Path
) -> None:
    turns = [
        ("user", "We decided to use PostgreSQL for the billing service."),
        ("assistant", "PostgreSQL it is."),
    ]

    def export(name: str, conv_turns: list[tuple[str, str]]) -> Path:
        path = tmp_path / name
        convs = [fx.chatgpt_conversation("conv-db", "Database choice", conv_turns, fx.T0)]
        path.write_text(json.dumps(convs))
        return path

    first = engram.imports.commit(engram.imports.read(export("first.json", turns)), LOCAL)
    assert first.conversations == 1 and first.messages_added == 2
    # next month's export: the same conversation, continued by one turn
    later = engram.imports.read(
        export("later.json", [*turns, ("user", "Also, I prefer pytest over unittest for tests.")])
    )
    preview = engram.imports.preview(later, LOCAL)
    assert preview.duplicates.conversations == 0 and preview.duplicates.messages == 2
    report = engram.imports.commit(later, LOCAL)
    # before, the conversation was skipped whole: 0 new messages, the new turn never stored
    assert (report.conversations, report.messages_added, report.already_imported) == (1, 1, 0)
    found = engram.search.search("pytest unittest", LOCAL, count_access=False)
    assert any("pytest" in i.memory.content for i in found.items)
    again = engram.imports.commit(engram.imports.read(tmp_path / "later.json"), LOCAL)
    assert (again.conversations, again.messages_added, again.already_imported) == (0, 0, 1)


def test_an_interrupted_import_resumes_without_duplicates(engram: Engram, tmp_path: Path) -> None:
    bundle = engram.imports.read(fx.chatgpt_export(tmp_path / "c.zip", extra=6))
    calls = 0

    def stop_half_way(done: int, total: int) -> None:
        nonlocal calls
        calls += 1
        if done > total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engram.imports.commit(bundle, LOCAL, progress=stop_half_way)
    partial = engram.store.count(MemoryFilter())
    assert partial > 0
    report = engram.imports.commit(bundle, LOCAL)
    assert report.already_imported > 0
    # the same as one clean import into a fresh environment: nothing twice
    engram.environments.create("fresh", LOCAL)
    engram.imports.commit(engram.imports.read(tmp_path / "c.zip"), LOCAL, "fresh")
    fresh = engram.environments.resolve("fresh", LOCAL)
    default = engram.environments.resolve(None, LOCAL)
    store = engram.extraction.conversations

    def stored_messages(key: str) -> int:
        # imported ids are the importer's own (caller ids are scoped per user)
        conv = store.find_conversation(LOCAL.user_id, f"chatgpt:{stable_key(default.id)[:8]}:{key}")
        return 0 if conv is None else store.count_messages(conv.id)

    assert sum(stored_messages(c.key) for c in bundle.conversations) == bundle.message_count
    assert engram.store.count(MemoryFilter(environment_ids=[default.id])) == engram.store.count(
        MemoryFilter(environment_ids=[fresh.id])
    )


@pytest.mark.parametrize("layout", ["legacy", "manifest"])
def test_claude_export_projects_become_environments(
    engram: Engram, tmp_path: Path, layout: str
) -> None:
    path = (
        fx.claude_legacy(tmp_path / "data.zip")
        if layout == "legacy"
        else fx.claude_manifest(tmp_path / "claude")
    )
    bundle = engram.imports.read(path)
    assert bundle.formats == ["claude"]
    assert [e.name for e in bundle.environments] == ["dotfiles"]
    assert any("starter project" in s.reason for s in bundle.skipped)
    if layout == "legacy":  # the account's own file is said to be that, not 'unknown JSON'
        reasons = {s.entry.rsplit("/", 1)[-1]: s.reason for s in bundle.skipped}
        assert reasons["users.json"] == "the account's details: not memories"
    conv = bundle.conversations[0]
    assert [m.content for m in conv.messages] == ["I use tabs, width 4.", "Got it."]
    preview = engram.imports.preview(bundle, LOCAL)
    assert preview.new_environments == ["dotfiles"]
    report = engram.imports.commit(bundle, LOCAL)
    assert report.environments_created == ["dotfiles"]
    dot = engram.environments.resolve("dotfiles", LOCAL)
    assert dot.description == "My shell setup"
    in_project = {
        m.content
        for m in engram.store.list_memories(MemoryFilter(environment_ids=[dot.id]), limit=50)
    }
    assert "Project instructions (Dotfiles): Prefer POSIX sh." in in_project
    assert "Document notes.md: Use zsh on the laptop." in in_project
    assert "The dotfiles live in ~/src/dotfiles." in in_project
    default = engram.environments.resolve(None, LOCAL)
    general = {
        m.content
        for m in engram.store.list_memories(MemoryFilter(environment_ids=[default.id]), limit=50)
    }
    assert {"Works on the billing service.", "Prefers short answers."} <= general


def test_gemini_activity_is_grouped_by_time_gap_with_stable_ids(
    engram: Engram, tmp_path: Path
) -> None:
    bundle = engram.imports.read(fx.gemini_activity(tmp_path / "My Activity.json"))
    assert bundle.formats == ["gemini"]
    assert [len(c.messages) for c in bundle.conversations] == [4, 1]
    assert bundle.conversations[0].messages[3].content == "Four.\n\nWidth 4."
    assert any("not a prompt" in s.reason for s in bundle.skipped)
    again = engram.imports.read(tmp_path / "My Activity.json")
    assert [c.key for c in again.conversations] == [c.key for c in bundle.conversations]
    engram.imports.commit(bundle, LOCAL)
    assert engram.imports.commit(again, LOCAL).already_imported == 2


def test_agent_transcripts(engram: Engram, tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    fx.claude_code_session(folder / "s-1.jsonl")
    fx.codex_session(folder / "rollout.jsonl")
    fx.gemini_cli_session(folder / "session-1.json")
    bundle = engram.imports.read(folder)
    assert sorted(bundle.formats) == ["claude-code", "codex", "gemini-cli"]
    texts = {c.source: [m.content for m in c.messages] for c in bundle.conversations}
    assert texts["claude-code"] == ["Run the tests with pytest -x please", "All tests pass."]
    assert texts["codex"] == ["We use ruff for linting.", "Understood, ruff it is."]
    assert texts["gemini-cli"] == ["Deploy with make deploy.", "Deploying."]
    report = engram.imports.commit(bundle, LOCAL)
    assert report.conversations == 3


def test_csv_with_a_column_map_and_bad_rows_skipped(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    path.write_text(
        "text,kind,importance,tags,created_at\n"
        "Prefers dark mode,preference,0.9,ui;theme,2026-01-02T00:00:00Z\n"
        "Bad importance,fact,high,,\n"
        "Bad date,fact,0.5,,yesterday\n"
        ",fact,0.5,,\n"
    )
    from engram.portability.tabular import parse_mapping

    bundle = engram.imports.read(path, csv_map=parse_mapping(["text=content", "kind=category"]))
    assert [m.memory.content for m in bundle.memories] == ["Prefers dark mode"]
    m = bundle.memories[0].memory
    assert (m.category, m.importance, m.tags) == ("preference", 0.9, ["ui", "theme"])
    reasons = sorted(s.reason for s in bundle.skipped)
    assert any("importance 'high' is not a number" in r for r in reasons)
    assert any("created_at 'yesterday'" in r for r in reasons)
    assert any("content" in r for r in reasons)
    with pytest.raises(InvalidInput, match="no 'content' column"):
        engram.imports.read(path)


def test_memory_list(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "memories.txt"
    path.write_text(
        "[2025-11-03] - Prefers tabs over spaces\n[2026-01-10] - Lives in Lyon\nnot a memory\n"
    )
    bundle = engram.imports.read(path)
    assert bundle.formats == ["memory-list"]
    assert [
        (m.memory.content, m.memory.created_at.isoformat()[:10])
        for m in bundle.memories
        if m.memory.created_at
    ] == [
        ("Prefers tabs over spaces", "2025-11-03"),
        ("Lives in Lyon", "2026-01-10"),
    ]
    engram.imports.commit(bundle, LOCAL)
    stored = engram.store.list_memories(MemoryFilter(), limit=10, order="created_at")
    assert stored[0].created_at.year == 2025


def test_wrong_format_is_named(engram: Engram, tmp_path: Path) -> None:
    path = tmp_path / "random.json"
    path.write_text(json.dumps({"hello": "world"}))
    with pytest.raises(InvalidInput, match=r"random\.json: not an export Engram can import"):
        engram.imports.read(path)


def test_importing_engram_s_plain_json_export_says_to_use_an_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    home = str(tmp_path / "h")
    assert main(["--home", home, "add", "Prefers pnpm over npm"]) == 0
    plain = tmp_path / "memories.json"
    assert main(["--home", home, "export", str(plain)]) == 0
    capsys.readouterr()
    assert main(["--home", str(tmp_path / "h2"), "import", str(plain)]) == 2
    err = capsys.readouterr().err
    assert "not an export Engram can import" in err and "--archive" in err
    # any other JSON is not told so
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"environments": [], "memories": [], "extra": 1}))
    assert main(["--home", str(tmp_path / "h2"), "import", str(other)]) == 2
    assert "--archive" not in capsys.readouterr().err


def test_cli_preview_import_export_and_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    home = str(tmp_path / "h")
    zip_path = str(fx.chatgpt_export(tmp_path / "chatgpt.zip"))
    assert main(["--home", home, "import", zip_path, "--preview"]) == 0
    out = capsys.readouterr().out
    assert "preview: nothing stored" in out and "chatgpt" in out and "user.json" in out
    assert main(["--home", home, "import", zip_path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["conversations"] == 2 and report["messages_added"] == 6
    assert main(["--home", home, "import", zip_path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["already_imported"] == 5
    xlsx = tmp_path / "m.xlsx"
    assert main(["--home", home, "export", str(xlsx)]) == 0 and xlsx.stat().st_size > 1000
    archive = tmp_path / "all.zip"
    assert main(["--home", home, "export", str(archive), "--archive"]) == 0
    capsys.readouterr()
    assert main(["--home", str(tmp_path / "h2"), "import", str(archive)]) == 0
    assert "restored and verified" in capsys.readouterr().out
    assert main(["--home", home, "import", str(tmp_path / "missing.zip")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_title_made_from_a_prompt_keeps_no_part_of_a_secret(
    engram: Engram, tmp_path: Path
) -> None:
    """Gemini Takeout has no titles: the import makes one from the first prompt. It is
    scrubbed before it is cut; cut first, a secret split by the cut no longer matched its
    pattern and its first part was stored (title, episode, versions) and shown in the preview."""
    secrets = fakes()
    records = []
    for day, secret in enumerate(secrets):
        for cut_at in (80, 120):  # the old cut and the new one
            lead = "Please wire up the deploy script for our staging box, with this: "
            prompt = (lead + "x" * 200)[: cut_at - 12] + " " + secret.text + " and use it"
            when = datetime(2026, 7, 1, 6 + cut_at // 40, tzinfo=UTC) + timedelta(days=day)
            at = when.isoformat().replace("+00:00", ".000Z")  # a conversation a day
            records.append(
                {
                    "header": "Gemini Apps",
                    "title": "Prompted " + prompt,
                    "time": at,
                    "products": ["Gemini Apps"],
                    "safeHtmlItem": [{"html": "<p>Done.</p>"}],
                }
            )
    path = tmp_path / "My Activity.json"
    path.write_text(json.dumps(records))
    bundle = engram.imports.read(path)
    sample = " ".join(engram.imports.preview(bundle, LOCAL).sample)
    engram.imports.commit(bundle, LOCAL)
    stored = [m.content for m in engram.store.list_memories(MemoryFilter(), limit=1000)]
    stored += [
        v.snapshot.content
        for m in engram.store.list_memories(MemoryFilter(), limit=1000)
        for v in engram.store.versions(m.id)
    ]
    memories = engram.store.list_memories(MemoryFilter(), limit=1000)
    convs = {m.thread for m in memories if m.thread}
    assert len(convs) == 2 * len(secrets)
    got = [engram.extraction.conversations.get_conversation(c) for c in convs]
    titles = [c.title for c in got if c is not None]
    text = "\n".join([sample, *map(str, stored), *titles])
    assert "wire up the deploy" in text  # the titles and episodes are there...
    for secret in secrets:  # ...without any part of a secret
        assert secret.tail[:6] not in text, secret.kind


def test_cli_preview_shows_the_sample_scrubbed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The preview quotes the export's own text: scrubbed on every edge, as REST's is."""
    from engram.cli import main

    secret = fakes()[0]
    path = tmp_path / "memories.txt"
    path.write_text(f"[2026-01-05] - My deploy token is {secret.text}\n")
    home = str(tmp_path / "h")
    for flags in ([], ["--json"]):
        assert main(["--home", home, "import", str(path), "--preview", *flags]) == 0
        out = capsys.readouterr().out
        assert "My deploy token is" in out and "REDACTED" in out
        assert secret.tail not in out


def test_cli_export_to_a_place_it_cannot_write_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from engram.cli import main

    home = str(tmp_path / "h")
    assert main(["--home", home, "add", "Prefers pnpm over npm"]) == 0
    assert "made a new Engram home" in capsys.readouterr().err  # the first command's note
    (tmp_path / "a-file.md").write_text("x")
    (tmp_path / "a-folder.json").mkdir()
    cases = [
        (["export", str(tmp_path / "missing" / "x.json")], "does not exist"),
        (["export", str(tmp_path / "missing" / "a.zip"), "--archive"], "does not exist"),
        (["export", str(tmp_path / "a-file.md"), "--format", "vault"], "not a folder"),
        (["export", str(tmp_path / "a-folder.json")], "it is a folder"),
    ]
    for args, why in cases:
        assert main(["--home", home, *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error: cannot write") and why in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "missing").exists()
    # Markdown by either suffix
    assert main(["--home", home, "export", str(tmp_path / "m.markdown")]) == 0
    assert (tmp_path / "m.markdown").read_text().startswith("# Memories")
    # any other failure of the file system: one line, exit code 1
    if Path("/dev/full").exists():
        assert main(["--home", home, "export", "/dev/full", "--format", "json"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "No space left" in err


def test_claude_memory_summaries_lose_their_markdown_emphasis() -> None:
    """Claude writes its memory summary in Markdown: '**Work**: ...' is stored 'Work: ...',
    not 'Work**: ...'; underscores of code and arithmetic stars are kept."""
    from engram.portability.claude import summary_lines

    summary = (
        "**Work**: the user is a backend developer in Lyon.\n"
        "- *Prefers* pnpm over npm, and **tmux**\n"
        "- Keeps `__init__` files and my_var_name; 2*3*4 is 24\n"
    )
    assert summary_lines(summary) == [
        "Work: the user is a backend developer in Lyon.",
        "Prefers pnpm over npm, and tmux",
        "Keeps `__init__` files and my_var_name; 2*3*4 is 24",
    ]


def test_a_preview_creates_no_environment_and_names_those_the_import_would(
    engram: Engram, tmp_path: Path
) -> None:
    """Before, the preview created the project's environment (audited), and did not list the
    one a CSV's environment column names, which the import then created."""
    from engram.actors import Actor

    actor = Actor(LOCAL.user_id, "cli", project="w33proj")
    csv = tmp_path / "envcol.csv"
    csv.write_text("content,environment\nFact for a new env,brand-new\nFact for the project,\n")
    before = [e.name for e in engram.environments.list(LOCAL)]
    preview = engram.imports.preview(engram.imports.read(csv), actor)
    assert preview.environment == "w33proj"
    assert preview.new_environments == ["brand-new", "w33proj"]
    assert [e.name for e in engram.environments.list(LOCAL)] == before  # nothing created
    report = engram.imports.commit(engram.imports.read(csv), actor)
    assert sorted(report.environments_created) == ["brand-new"]  # the project's: on first use
    names = {e.name for e in engram.environments.list(LOCAL)}
    assert {"brand-new", "w33proj"} <= names
    again = engram.imports.preview(engram.imports.read(csv), actor)
    assert again.new_environments == [] and again.environment == "w33proj"


def test_the_import_report_says_which_secrets_it_redacted(
    engram: Engram, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An import is where a user most needs to hear it (to rotate the keys). Before, neither
    the report nor its CLI line said a word, though both secrets were removed."""
    from engram.cli import main

    key, aws = fakes()[6], fakes()[1]  # an OpenAI key, an AWS secret
    turns = [("user", f"Here is my {key.text} for the bot"), ("assistant", "Noted.")]
    convs = [fx.chatgpt_conversation("conv-k", "Keys", turns, fx.T0)]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(convs))
    mems = tmp_path / "memories.txt"
    mems.write_text(f"[2026-01-05] - The deploy uses {aws.text}\n")
    report = engram.imports.commit(engram.imports.read(path), LOCAL)
    assert report.redactions == {"api_key": 1}
    assert engram.imports.commit(engram.imports.read(mems), LOCAL).redactions == {
        "aws_secret_key": 1
    }
    home = str(tmp_path / "h")
    assert main(["--home", home, "import", str(path)]) == 0
    assert "redacted before storing: 1 api_key (rotate them)" in capsys.readouterr().out


def test_the_report_counts_each_secret_once_a_title_s_too(engram: Engram, tmp_path: Path) -> None:
    """The report counts what it removed from what it stored: a title's secret, once; an
    export imported again, nothing (nothing new stored); a continued conversation, only its
    new messages' secrets. Before, a re-import counted every secret again and a title's never."""
    key, aws = fakes()[6], fakes()[1]
    turns = [("user", f"Here is my {key.text} for the bot"), ("assistant", "Noted.")]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([fx.chatgpt_conversation("c", f"Keys {aws.text}", turns, fx.T0)]))
    first = engram.imports.commit(engram.imports.read(path), LOCAL)
    assert first.redactions == {"api_key": 1, "aws_secret_key": 1}
    again = engram.imports.commit(engram.imports.read(path), LOCAL)
    assert again.redactions == {} and again.already_imported == 1
    more = [*turns, ("user", f"and the other one {fakes()[6].text}x"), ("assistant", "Ok.")]
    path.write_text(json.dumps([fx.chatgpt_conversation("c", f"Keys {aws.text}", more, fx.T0)]))
    continued = engram.imports.commit(engram.imports.read(path), LOCAL)
    assert continued.messages_added == 2 and continued.redactions == {"api_key": 1}


def test_a_title_s_secret_counts_once_per_conversation(engram: Engram) -> None:
    """A delivery to an existing conversation stores no title: before, each one counted
    the title's secret again, with nothing added."""
    from engram.extraction.conversation import NewMessage, Speaker

    key = fakes()[6].text
    hello = [NewMessage(role=Speaker.USER, content="hello")]
    first = engram.extraction.add_messages("c-1", hello, LOCAL, title=f"deploy {key}")
    again = engram.extraction.add_messages("c-1", hello, LOCAL, title=f"deploy {key}")
    assert first.redactions == {"api_key": 1} and first.messages_added == 1
    assert again.redactions == {} and again.messages_added == 0


@pytest.mark.parametrize("sep", [" ", ","])  # prose, and minified JSON or a log line
def test_a_message_cut_to_the_limit_keeps_no_part_of_a_secret(
    engram: Engram, tmp_path: Path, sep: str
) -> None:
    """A message longer than a memory holds is cut before the import scrubs it: a token the
    cut splits is left out whole, in text without spaces too. Before, 'ghp_' and 21 of its
    characters were stored (too short for the GitHub token pattern, so the scrubber let them
    through)."""
    token = "ghp_" + "Q7x9K2mPzR4tW8vY1nB5cL3dF6hJ0sAeGiUo"
    text = f"lorem{sep}" * 3329 + token + f"{sep}and{sep}more"  # the cut: 'ghp_' + 21
    conv = fx.claude_conversations()[0]
    conv["chat_messages"] = [
        {
            "uuid": "m-long",
            "sender": "human",
            "text": text,
            "created_at": "2026-03-01T10:00:00.000000Z",
            "content": [{"type": "text", "text": text}],
            "attachments": [],
            "files": [],
        }
    ]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([conv]))
    engram.imports.commit(engram.imports.read(path), LOCAL)
    conversations = engram.extraction.conversations
    (conv_id,) = conversations.owned_conversations(LOCAL.user_id)
    (message,) = conversations.last_messages(conv_id, 5)
    stored = message.content
    assert "ghp_" not in stored and token[4:14] not in stored
    assert stored.endswith(f"lorem{sep}".rstrip() + "…") and len(stored) <= 20_000
