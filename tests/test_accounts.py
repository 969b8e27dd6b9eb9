"""Accounts and keys in the service layer, and the token file 'engram init' writes."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from engram import LOCAL, Engram, NotFound, PermissionDenied, Unauthenticated
from engram.accounts import AuditQuery, Scope
from engram.cli import main
from tests.sql import query


def test_keys_are_stored_as_digests_and_scoped(engram: Engram) -> None:
    engram.accounts.ensure_owner("me")
    issued = engram.accounts.issue_key(LOCAL, "k", [Scope.READ])
    rows = query(engram.store, "SELECT * FROM api_keys")
    assert issued.token not in str(rows) and issued.token.startswith("egm_")
    actor = engram.accounts.authenticate(issued.token)
    assert actor.user_id == "local" and actor.scopes == frozenset({Scope.READ})
    with pytest.raises(PermissionDenied):  # cannot mint more than it holds
        engram.accounts.issue_key(actor, "more", [Scope.WRITE])
    with pytest.raises(Unauthenticated):
        engram.accounts.authenticate(issued.token[:-1] + "x")


def test_passwords_use_argon2id(engram: Engram) -> None:
    user = engram.accounts.create_user("erin", LOCAL, password="long enough pw")
    stored = engram.store.accounts.password_hash(user.id)
    assert stored is not None and stored.startswith("$argon2id$")
    assert engram.accounts.verify_password("erin", "long enough pw").id == user.id
    with pytest.raises(Unauthenticated):
        engram.accounts.verify_password("erin", "wrong password")


def test_find_user_by_id_or_name(engram: Engram) -> None:
    """Admins find anyone by id or name; others only themselves, anyone else is not found."""
    engram.accounts.ensure_owner("me")
    erin = engram.accounts.create_user("erin", LOCAL)
    sam = engram.accounts.create_user("sam", LOCAL)
    assert engram.accounts.find_user("erin", LOCAL) == erin
    assert engram.accounts.find_user(erin.id, LOCAL) == erin
    as_erin = engram.accounts.authenticate(engram.accounts.issue_key(LOCAL, user_id=erin.id).token)
    assert engram.accounts.find_user("erin", as_erin).id == erin.id
    for hidden in ("sam", sam.id, "nobody"):
        with pytest.raises(NotFound, match=f"user '{hidden}' does not exist"):
            engram.accounts.find_user(hidden, as_erin)
    with pytest.raises(NotFound):
        engram.accounts.find_user("nobody", LOCAL)


def test_init_writes_owner_token_0600_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "h"
    assert main(["--home", str(home), "init"]) == 0
    token_file = home / "token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "server_secret").stat().st_mode) == 0o600
    first = token_file.read_text().strip()
    out = capsys.readouterr().out
    assert first not in out  # never printed unless asked
    assert main(["--home", str(home), "init"]) == 0
    assert token_file.read_text().strip() == first
    assert first not in capsys.readouterr().out
    assert main(["--home", str(home), "init", "--rotate"]) == 0
    second = token_file.read_text().strip()
    assert second != first and second in capsys.readouterr().out
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    with Engram.open(__import__("engram").Settings.load(home)) as engram:
        assert engram.accounts.authenticate(second).user_id == "local"
        with pytest.raises(Unauthenticated):
            engram.accounts.authenticate(first)
        assert len(engram.accounts.list_users(LOCAL)) == 1


def test_owner_bootstrap_is_a_service_method(engram: Engram, tmp_path: Path) -> None:
    """The owner and their token file, on either backend: issued once, kept while it works,
    replaced on rotate (the old token dead) or when the file holds a dead token; audited."""
    token_file = tmp_path / "token"
    issued = engram.accounts.bootstrap_owner("me", token_file)
    assert issued is not None and token_file.read_text().strip() == issued.token
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert engram.accounts.get_user("local", LOCAL).name == "me"
    owner = engram.accounts.authenticate(issued.token)
    assert owner.can(Scope.ADMIN) and owner.user_id == "local"
    assert engram.accounts.bootstrap_owner("other", token_file) is None
    assert token_file.read_text().strip() == issued.token
    rotated = engram.accounts.bootstrap_owner("me", token_file, rotate=True)
    assert rotated is not None and rotated.token != issued.token
    with pytest.raises(Unauthenticated):
        engram.accounts.authenticate(issued.token)
    engram.accounts.revoke_key(rotated.key.id, LOCAL)
    fresh = engram.accounts.bootstrap_owner("me", token_file)  # a dead token: a new key
    assert fresh is not None and engram.accounts.authenticate(fresh.token).user_id == "local"
    actions = [e.action for e in engram.audit.query(AuditQuery(limit=50), LOCAL)]
    assert actions.count("key.create") == 2 and "key.rotate" in actions
