"""``engram users passwd`` sets the password the OAuth sign-in page checks; ``engram keys
grants`` lists the signed-in MCP clients and ``engram keys revoke grt_…`` ends one (audited)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from engram import LOCAL, Engram
from engram.accounts import AuditQuery
from engram.actors import LOCAL_USER
from engram.cli import main
from engram.config import Settings
from engram.errors import Unauthenticated


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def consent(engram: Engram, name: str, password: str) -> str:
    """Register a client and sign in to it as ``name`` granting read only; the grant's id."""
    engram.oauth.register_client("c1", {"client_id": "c1", "client_name": "Claude"})
    pending = engram.oauth.pending(
        client_id="c1",
        redirect_uri="https://claude.ai/api/mcp/auth_callback",
        redirect_uri_explicit=True,
        code_challenge="x" * 43,
        state=None,
        scopes=["read", "write"],
        resource="http://127.0.0.1:8765/mcp",
    )
    _, grant = engram.oauth.approve(pending, name, password, ["read"])
    return grant.id


def test_passwd_grants_and_revoke(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "h"
    assert run(capsys, "--home", str(home), "init")[0] == 0
    with Engram.open(Settings.load(home)) as engram:
        owner = engram.accounts.get_user(LOCAL_USER, LOCAL).name
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    code, _, err = run(capsys, "--home", str(home), "users", "passwd", "--password-stdin")
    assert code != 0 and "8-1024 characters" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    code, out, _ = run(capsys, "--home", str(home), "users", "passwd", owner, "--password-stdin")
    assert code == 0 and "password set" in out
    code, _, err = run(capsys, "--home", str(home), "users", "passwd", "nobody", "--password-stdin")
    assert code != 0 and "'nobody' does not exist" in err

    with Engram.open(Settings.load(home)) as engram:
        with pytest.raises(Unauthenticated):
            engram.accounts.verify_password(owner, "short")
        grant_id = consent(engram, owner, "a long enough password")
    code, out, _ = run(capsys, "--home", str(home), "keys", "grants", "--json")
    listed = json.loads(out)
    assert code == 0 and [(g["id"], g["scopes"]) for g in listed] == [(grant_id, ["read"])]
    # the table (80 columns when not a terminal) prints the id whole, as revoke takes it
    code, out, _ = run(capsys, "--home", str(home), "keys", "grants")
    assert code == 0 and any(grant_id in line for line in out.splitlines()), out
    code, out, _ = run(capsys, "--home", str(home), "keys", "list")
    assert code == 0 and "key_" in out and "…\n" not in out.split("key_", 1)[1][:30], out
    code, out, _ = run(capsys, "--home", str(home), "keys", "revoke", grant_id)
    assert code == 0 and f"revoked grant {grant_id}" in out
    code, out, _ = run(capsys, "--home", str(home), "keys", "grants", "--json")
    assert json.loads(out)[0]["revoked_at"] is not None
    with Engram.open(Settings.load(home)) as engram:
        actions = [e.action for e in engram.audit.query(AuditQuery(target=grant_id), LOCAL)]
    assert actions == ["oauth.grant.revoke", "oauth.grant"]
