"""The OAuth consent page's failed sign-ins count into the same limits as the dashboard's
(engram.service.sign_ins), over the live OAuth server of tests/test_oauth.py."""

from __future__ import annotations

import pytest

from engram.errors import Saturated
from engram.service.sign_ins import MAX_FAILURES
from tests.test_oauth import PASSWORD, RawClient, pkce, raw, server, sign_in

__all__ = ["raw", "server"]  # the fixtures, used by name


def test_failed_sign_ins_count_on_the_consent_page_and_the_dashboard_together(
    raw: RawClient,
) -> None:
    """One budget of guesses per name and address for every page that checks a password: the
    consent page's failures lock the dashboard's sign-in, and the other way round."""
    sign_ins = raw.server.engram.sign_ins
    for _ in range(MAX_FAILURES - 1):
        _, challenge = pkce()
        failed = sign_in(raw.http, raw.authorize_url(challenge), password="wrong password")
        assert failed.status_code == 401
    sign_ins.failed("alice", "127.0.0.1")  # as the dashboard's login form counts one
    _, challenge = pkce()
    locked = sign_in(raw.http, raw.authorize_url(challenge))  # the right password
    assert locked.status_code == 429 and "too many failed sign-ins" in locked.text
    assert "location" not in locked.headers
    assert int(locked.headers["retry-after"]) > 0  # the wait, not only in the page (35b)
    with pytest.raises(Saturated):
        sign_ins.verify("alice", PASSWORD, "127.0.0.1")  # the dashboard's check
    assert raw.server.engram.store.oauth.list_grants() == []
