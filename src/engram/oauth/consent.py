"""The sign-in and consent page a remote MCP client sends the user to (``/oauth/consent``).

Server-rendered, no script, one same-origin stylesheet. It names the client, where it will send
the user back, and the scopes (``read``; ``write`` can be left out); the user signs in with
their Engram password (``engram users passwd``). The form carries a CSRF token that must match
an HttpOnly, SameSite=Strict cookie set with the page; the page may not be framed. Failed
sign-ins are limited per user name.
"""

from __future__ import annotations

import hmac
import secrets
from html import escape
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from engram.errors import InvalidInput, NotFound, Saturated, Unauthenticated
from engram.service import Engram
from engram.service.oauth import PendingAuthorization

CONSENT_PATH = "/oauth/consent"
STYLE_PATH = "/oauth/consent.css"
CSRF_COOKIE = "engram_oauth_csrf"

SCOPE_TEXT = {
    "read": "Read your memories, episodes, procedures and Soul",
    "write": "Add, change and delete memories (and everything read allows)",
}

STYLE = """\
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { max-width: 28rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }
h1 { font-size: 1.4rem; } .client { font-weight: 600; }
fieldset { border: 1px solid #8886; border-radius: .5rem; margin: 1rem 0; }
label { display: block; margin: .4rem 0; }
input[type=text], input[type=password] { width: 100%; padding: .5rem; box-sizing: border-box; }
.buttons { display: flex; gap: .5rem; } button { padding: .5rem 1rem; font-size: 1rem; }
.error { color: #c00; border-left: 3px solid #c00; padding-left: .5rem; }
.muted { opacity: .75; font-size: .9rem; }
"""


def _origin(uri: str) -> str:
    """The CSP source that lets the form's redirect reach the client's redirect URI."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"


def _headers(redirect_uri: str | None) -> dict[str, str]:
    form_action = "'self'" + ("" if redirect_uri is None else f" {_origin(redirect_uri)}")
    return {
        "Content-Security-Policy": (
            "default-src 'none'; style-src 'self'; img-src 'self'; "
            f"form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
    }


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)} · Engram</title><link rel="stylesheet" href="{STYLE_PATH}">'
        f"</head><body><main>{body}</main></body></html>"
    )


def _problem(status: int, message: str) -> HTMLResponse:
    body = f'<h1>Cannot sign in</h1><p class="error" role="alert">{escape(message)}</p>'
    return HTMLResponse(_page("Cannot sign in", body), status_code=status, headers=_headers(None))


class ConsentPage:
    """GET shows the page; POST signs in and answers the client with a code (or a refusal)."""

    def __init__(self, engram: Engram, issuer: str) -> None:
        self._engram = engram
        self._issuer = issuer
        self._secure = issuer.startswith("https://")

    def _form(
        self,
        sealed: str,
        pending: PendingAuthorization,
        client_name: str,
        *,
        error: str | None = None,
        name: str = "",
        status: int = 200,
    ) -> Response:
        csrf = secrets.token_urlsafe(32)
        where = urlsplit(pending.redirect_uri)
        back_to = where.netloc or f"{where.scheme}:"
        scopes = "".join(
            f'<label><input type="checkbox" name="scope" value="{s}" checked'
            f"{' disabled' if s == 'read' else ''}> <b>{s}</b>: {escape(SCOPE_TEXT[s])}</label>"
            for s in pending.scopes
        )
        if "read" in pending.scopes:  # a disabled box is not sent: read is always granted
            scopes += '<input type="hidden" name="scope" value="read">'
        alert = "" if error is None else f'<p class="error" role="alert">{escape(error)}</p>'
        body = f"""
<h1>Sign in to Engram</h1>
<p><span class="client">{escape(client_name)}</span> wants to use your Engram memory
through MCP (<code>{escape(pending.resource)}</code>).</p>
<p class="muted">After you allow it, you go back to <code>{escape(back_to)}</code>.</p>
{alert}
<form method="post" action="{CONSENT_PATH}">
<input type="hidden" name="request" value="{escape(sealed)}">
<input type="hidden" name="csrf" value="{csrf}">
<fieldset><legend>It asks to</legend>{scopes}</fieldset>
<label for="username">User name</label>
<input id="username" name="username" type="text" autocomplete="username" required
 value="{escape(name)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<p class="buttons"><button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny" formnovalidate>Deny</button></p>
</form>
<p class="muted">You can revoke this later, on the Keys page of the dashboard
(<code>/ui/keys</code>) or with <code>engram keys grants</code>.</p>"""
        response = HTMLResponse(
            _page("Sign in", body), status_code=status, headers=_headers(pending.redirect_uri)
        )
        response.set_cookie(
            CSRF_COOKIE,
            csrf,
            max_age=900,
            path="/oauth",
            secure=self._secure,
            httponly=True,
            samesite="strict",
        )
        return response

    def _client_name(self, client_id: str) -> str:
        client = self._engram.oauth.client(client_id)
        if client is None:
            raise NotFound(f"client {client_id!r} is not registered")
        return str(client.get("client_name") or client_id)

    def _back(self, pending: PendingAuthorization, **params: str) -> Response:
        uri = construct_redirect_uri(
            pending.redirect_uri, state=pending.state, iss=self._issuer, **params
        )
        return RedirectResponse(uri, status_code=303, headers={"Cache-Control": "no-store"})

    async def show(self, request: Request) -> Response:
        sealed = request.query_params.get("request", "")
        try:
            pending = self._engram.oauth.unseal(sealed)
            name = await anyio.to_thread.run_sync(self._client_name, pending.client_id)
        except (InvalidInput, NotFound, ValueError) as exc:
            return _problem(400, getattr(exc, "message", "the sign-in request is malformed"))
        return self._form(sealed, pending, name)

    async def submit(self, request: Request) -> Response:
        form = await request.form()

        def field(key: str) -> str:
            value = form.get(key)
            return value if isinstance(value, str) else ""

        cookie = request.cookies.get(CSRF_COOKIE, "")
        if not cookie or not hmac.compare_digest(cookie, field("csrf")):
            return _problem(
                403, "the form's CSRF token is missing or does not match: reload the page"
            )
        sealed = field("request")
        try:
            pending = self._engram.oauth.unseal(sealed)
            client_name = await anyio.to_thread.run_sync(self._client_name, pending.client_id)
        except (InvalidInput, NotFound, ValueError) as exc:
            return _problem(400, getattr(exc, "message", "the sign-in request is malformed"))
        if field("action") == "deny":
            return self._back(pending, error="access_denied", error_description="denied")
        name = field("username").strip()
        address = request.client.host if request.client else ""
        scopes = [v for v in form.getlist("scope") if isinstance(v, str)]
        try:
            code, _ = await anyio.to_thread.run_sync(
                self._engram.oauth.approve, pending, name, field("password"), scopes, address
            )
        except Saturated as exc:  # the failures of this name (dashboard's included)
            response = self._form(
                sealed, pending, client_name, error=exc.message, name=name, status=429
            )
            response.headers["Retry-After"] = str(exc.details.get("retry_after", 1))
            return response
        except Unauthenticated as exc:
            return self._form(
                sealed, pending, client_name, error=exc.message, name=name, status=401
            )
        except (InvalidInput, NotFound) as exc:
            return self._form(
                sealed, pending, client_name, error=exc.message, name=name, status=400
            )
        return self._back(pending, code=code)

    @staticmethod
    async def style(request: Request) -> Response:
        return Response(
            STYLE,
            media_type="text/css",
            headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
        )
