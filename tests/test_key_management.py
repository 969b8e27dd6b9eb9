"""Managing keys needs the admin scope, or acting on the caller's own key; no path ever yields a
key with a scope its caller lacks (issue 13, finding 1)."""

from __future__ import annotations

import pytest

from engram import LOCAL, Engram, NotFound, PermissionDenied
from engram.accounts import Scope
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture


def _owner_keys(engram: Engram) -> tuple[str, str, str]:
    """The owner's admin key id, and tokens of a read+write and a write-only key."""
    engram.accounts.ensure_owner("me")
    admin = engram.accounts.issue_key(LOCAL, "admin", [Scope.ADMIN])
    rw = engram.accounts.issue_key(LOCAL, "rw", [Scope.READ, Scope.WRITE])
    wo = engram.accounts.issue_key(LOCAL, "wo", [Scope.WRITE])
    return admin.key.id, rw.token, wo.token


def test_a_key_without_admin_manages_only_itself(engram: Engram) -> None:
    admin_id, rw_token, wo_token = _owner_keys(engram)
    rw = engram.accounts.authenticate(rw_token)
    wo = engram.accounts.authenticate(wo_token)
    for actor in (rw, wo):
        with pytest.raises(PermissionDenied):
            engram.accounts.rotate_key(admin_id, actor)
        with pytest.raises(PermissionDenied):
            engram.accounts.revoke_key(admin_id, actor)
        with pytest.raises(PermissionDenied):
            engram.accounts.get_key(admin_id, actor)
        with pytest.raises(PermissionDenied):
            engram.accounts.issue_key(actor, "more", [Scope.WRITE])
        assert [k.id for k in engram.accounts.list_keys(actor)] == [actor.key_id]
    admin_key = engram.accounts.get_key(admin_id, LOCAL)
    assert admin_key.revoked_at is None and admin_key.replaced_by is None

    # its own key: rotation keeps exactly its scopes, and revocation works
    assert rw.key_id is not None and wo.key_id is not None
    rotated = engram.accounts.rotate_key(rw.key_id, rw)
    assert rotated.key.scopes == [Scope.READ, Scope.WRITE]
    assert engram.accounts.authenticate(rotated.token).scopes == {Scope.READ, Scope.WRITE}
    assert engram.accounts.revoke_key(wo.key_id, wo).revoked_at is not None


def test_no_path_widens_a_key(engram: Engram) -> None:
    engram.accounts.ensure_owner("me")
    other = engram.accounts.create_user("dana", LOCAL, is_admin=True)
    dana_admin = engram.accounts.issue_key(LOCAL, "a", [Scope.ADMIN], user_id=other.id)
    dana_read = engram.accounts.issue_key(LOCAL, "r", [Scope.READ], user_id=other.id)
    reader = engram.accounts.authenticate(dana_read.token)
    with pytest.raises(PermissionDenied):
        engram.accounts.rotate_key(dana_admin.key.id, reader)
    with pytest.raises(PermissionDenied):
        engram.accounts.issue_key(reader, "x", [Scope.READ])
    # another user's keys do not exist for a non-admin key
    admin_id, _, _ = _owner_keys(engram)
    with pytest.raises(NotFound):
        engram.accounts.revoke_key(admin_id, reader)
    every = engram.accounts.list_keys(LOCAL, "*")
    assert all(k.revoked_at is None for k in every)


def test_rest_rotation_cannot_mint_an_admin_token(live: Live) -> None:
    with live.client(live.owner_token) as owner:
        rw = owner.post("/api/v1/keys", json={"name": "rw"}).json()
        wo = owner.post("/api/v1/keys", json={"name": "wo", "scopes": ["write"]}).json()
        admin_id = next(k["id"] for k in owner.get("/api/v1/keys").json() if "admin" in k["scopes"])
    with live.client(rw["token"]) as c:
        listed = c.get("/api/v1/keys").json()
        assert [k["id"] for k in listed] == [rw["key"]["id"]]
        r = c.post(f"/api/v1/keys/{admin_id}/rotate")
        assert r.status_code == 403, r.text
        assert "token" not in r.text
    with live.client(wo["token"]) as c:
        r = c.delete(f"/api/v1/keys/{admin_id}")
        assert r.status_code == 403, r.text
    with live.client(live.owner_token) as owner:
        assert owner.get("/api/v1/users/me").status_code == 200  # the admin key still works
