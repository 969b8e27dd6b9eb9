"""Who may do what, over HTTP against a live server: isolation, roles, key lifecycle, audit."""

from __future__ import annotations

import httpx
import pytest

from engram.accounts import Scope
from tests import test_api_live
from tests.test_api_live import Live

live = test_api_live.live  # the live-server fixture


def _seed(c: httpx.Client) -> tuple[str, dict[str, str]]:
    env = c.post("/api/v1/environments", json={"name": "secret-project"}).json()
    ids = {
        "facts": c.post(
            "/api/v1/facts", params={"environment": env["id"]}, json={"content": "A's fact"}
        ).json()["id"],
        "episodes": c.post(
            "/api/v1/episodes",
            params={"environment": env["id"]},
            json={"layer": "episode", "content": "A's session"},
        ).json()["id"],
        "procedures": c.post(
            "/api/v1/procedures",
            params={"environment": env["id"]},
            json={"content": "A's workflow", "procedure": {"name": "deploy"}},
        ).json()["id"],
    }
    return env["id"], ids


def _every_endpoint(env_id: str, ids: dict[str, str]) -> list[tuple[str, str, dict[str, object]]]:
    calls: list[tuple[str, str, dict[str, object]]] = [
        ("GET", f"/api/v1/environments/{env_id}", {}),
        ("DELETE", f"/api/v1/environments/{env_id}", {}),
        ("GET", f"/api/v1/environments/{env_id}/members", {}),
        ("PUT", f"/api/v1/environments/{env_id}/members/usr_x", {"json": {"role": "reader"}}),
        ("DELETE", f"/api/v1/environments/{env_id}/members/usr_x", {}),
    ]
    for layer, mid in ids.items():
        base = f"/api/v1/{layer}"
        new: dict[str, object] = {"content": "x"}
        if layer == "procedures":
            new["procedure"] = {"name": "p"}
        calls += [
            ("GET", base, {"params": {"environment": env_id}}),
            ("POST", base, {"params": {"environment": env_id}, "json": new}),
            ("GET", f"{base}/{mid}", {}),
            ("PATCH", f"{base}/{mid}", {"json": {"content": "stolen"}}),
            ("DELETE", f"{base}/{mid}", {}),
            ("GET", f"{base}/{mid}/history", {}),
            ("POST", f"{base}/{mid}/restore", {"json": {"version": 1}}),
            (
                "PATCH",
                f"{base}/bulk",
                {"json": {"items": [{"id": mid, "patch": {"pinned": True}}]}},
            ),
            ("POST", f"{base}/bulk-delete", {"json": {"ids": [mid]}}),
            ("POST", f"{base}/purge", {"json": {"ids": [mid]}}),
        ]
    calls += [
        ("POST", f"/api/v1/procedures/{ids['procedures']}/success", {}),
        ("POST", f"/api/v1/procedures/{ids['procedures']}/failure", {}),
    ]
    return calls


@pytest.mark.slow
def test_isolation_matrix_and_roles(live: Live) -> None:
    with live.client(live.owner_token) as a:
        env_id, ids = _seed(a)
    bob, bob_token = live.new_user("bob")

    # a stranger: every endpoint answers 404 (no existence leak), nothing changes
    with live.client(bob_token) as b:
        for method, path, kw in _every_endpoint(env_id, ids):
            r = b.request(method, path, **kw)  # type: ignore[arg-type]
            assert r.status_code == 404, (method, path, r.status_code, r.text)
            assert r.json()["error"]["code"] == "not_found"
        assert env_id not in {e["id"] for e in b.get("/api/v1/environments").json()}
        assert b.get("/api/v1/environments/secret-project").status_code == 404  # nor by name

    # shared as reader: reads work, every write is 403
    with live.client(live.owner_token) as a:
        assert (
            a.put(
                f"/api/v1/environments/{env_id}/members/{bob}", json={"role": "reader"}
            ).status_code
            == 200
        )
    reads = {"GET"}
    with live.client(bob_token) as b:
        assert env_id in {e["id"] for e in b.get("/api/v1/environments").json()}
        listed = b.get("/api/v1/facts", params={"environment": env_id}).json()
        assert [m["id"] for m in listed["items"]] == [ids["facts"]]
        for method, path, kw in _every_endpoint(env_id, ids):
            r = b.request(method, path, **kw)  # type: ignore[arg-type]
            want = 200 if method in reads else 403
            assert r.status_code == want, (method, path, r.status_code, r.text)
        # by name too, as the listing shows it (walkthrough 32, finding 12)
        assert b.get("/api/v1/environments/secret-project").json()["id"] == env_id

    # promoted to writer: can write, but purge and member management stay with the owner
    with live.client(live.owner_token) as a:
        a.put(f"/api/v1/environments/{env_id}/members/{bob}", json={"role": "writer"})
    with live.client(bob_token) as b:
        r = b.patch(f"/api/v1/facts/{ids['facts']}", json={"content": "edited by bob"})
        assert r.status_code == 200 and r.json()["version"] == 2
        created = b.post("/api/v1/facts", params={"environment": env_id}, json={"content": "b"})
        assert created.status_code == 201 and created.json()["author"] == bob
        assert b.post("/api/v1/facts/purge", json={"ids": [ids["facts"]]}).status_code == 403
        assert b.delete(f"/api/v1/environments/{env_id}").status_code == 403
        # leaving is allowed
        assert b.delete(f"/api/v1/environments/{env_id}/members/{bob}").status_code == 200
        assert b.get(f"/api/v1/facts/{ids['facts']}").status_code == 404


def test_read_scope_cannot_write(live: Live) -> None:
    _, token = live.new_user("reader-key", Scope.READ)
    with live.client(token) as c:
        r = c.post("/api/v1/environments", json={"name": "mine"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "permission_denied"
        assert c.get("/api/v1/users/me").status_code == 200


def test_revoked_and_rotated_keys_stop_at_once(live: Live) -> None:
    with live.client(live.owner_token) as owner:
        made = owner.post("/api/v1/keys", json={"name": "laptop"}).json()
        token, key_id = made["token"], made["key"]["id"]
        assert token.startswith("egm_")
        with live.client(token) as c:
            assert c.get("/api/v1/users/me").json()["id"] == "local"
            rotated = c.post(f"/api/v1/keys/{key_id}/rotate").json()
            assert c.get("/api/v1/users/me").status_code == 401  # the old token, at once
        with live.client(rotated["token"]) as c:
            assert c.get("/api/v1/users/me").status_code == 200
        listed = {k["id"]: k for k in owner.get("/api/v1/keys").json()}
        assert (
            listed[key_id]["revoked_at"] and listed[key_id]["replaced_by"] == rotated["key"]["id"]
        )
        assert listed[rotated["key"]["id"]]["last_used_at"] is not None
        assert "token" not in listed[key_id] and "digest" not in str(listed)
        owner.delete(f"/api/v1/keys/{rotated['key']['id']}")
        with live.client(rotated["token"]) as c:
            r = c.get("/api/v1/users/me")
            assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"


def test_every_mutation_is_audited(live: Live) -> None:
    bob, bob_token = live.new_user("carol")
    with live.client(live.owner_token) as c:
        env = c.post("/api/v1/environments", json={"name": "audited"}).json()
        p = {"environment": env["id"]}
        fact = c.post("/api/v1/facts", params=p, json={"content": "one"}).json()
        bulk = c.post("/api/v1/facts/bulk", params=p, json=[{"content": "two"}]).json()
        c.patch(f"/api/v1/facts/{fact['id']}", json={"content": "uno"})
        c.delete(f"/api/v1/facts/{fact['id']}")
        c.post(f"/api/v1/facts/{fact['id']}/restore", json={})
        proc = c.post(
            "/api/v1/procedures", params=p, json={"content": "x", "procedure": {"name": "p"}}
        ).json()
        c.post(f"/api/v1/procedures/{proc['id']}/success", json={"note": "ok"})
        c.post(f"/api/v1/procedures/{proc['id']}/failure")
        c.put(f"/api/v1/environments/{env['id']}/members/{bob}", json={"role": "writer"})
        c.delete(f"/api/v1/environments/{env['id']}/members/{bob}")
        c.post("/api/v1/facts/purge", json={"ids": [bulk[0]["id"]]})
        key = c.post("/api/v1/keys", json={"name": "k"}).json()
        c.delete(f"/api/v1/keys/{key['key']['id']}")
        c.put("/api/v1/users/local/password", json={"password": "correct horse"})
        entries = c.get("/api/v1/audit", params={"limit": 1000}).json()
        history = c.get("/api/v1/audit", params={"target": fact["id"]}).json()
        mine = c.get("/api/v1/audit", params={"action": "memory."}).json()
    actions = [e["action"] for e in reversed(entries)]
    for expected in (
        "environment.create",
        "memory.create",
        "memory.update",
        "memory.delete",
        "memory.restore",
        "memory.success",
        "memory.failure",
        "environment.share",
        "environment.unshare",
        "memory.purge",
        "key.create",
        "key.revoke",
        "user.password",
    ):
        assert expected in actions, expected
    assert [e["action"] for e in reversed(history)] == [
        "memory.create",
        "memory.update",
        "memory.delete",
        "memory.restore",
    ]
    assert [(e["before"][fact["id"]], e["after"][fact["id"]]) for e in reversed(history)] == [
        (None, 1),
        (1, 2),
        (2, 3),
        (3, 4),
    ]
    assert all(e["interface"] == "api" and e["key_id"] for e in history)
    assert all(e["action"].startswith("memory.") for e in mine)
    # a non-admin sees only their own entries
    with live.client(bob_token) as b:
        assert b.get("/api/v1/audit").json() == []
