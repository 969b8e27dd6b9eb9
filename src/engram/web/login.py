"""Sign-in, sign-out and sign-out everywhere.

The sign-in form carries its own CSRF token (a random value in a short-lived SameSite=Strict
cookie that the form must echo), so another site cannot sign a browser into an account.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from engram.errors import Saturated, Unauthenticated
from engram.web.pages import PREFIX, CsrfRefused, Posted, render, web_auth
from engram.web.session import clear_session_cookie, set_session_cookie

router = APIRouter()
LOGIN_CSRF = "engram_login_csrf"


def _safe_next(target: str) -> str:
    """Only a dashboard path: never another site (``//evil``) after sign-in."""
    ok = target.startswith(PREFIX + "/") and not target.startswith("//") and "\\" not in target
    return target if ok else PREFIX + "/"


def _form(request: Request, next_: str, status: int = 200, error: str = "") -> HTMLResponse:
    token = secrets.token_urlsafe(32)
    response = render(
        request, None, "login.html", status, csrf=token, next=_safe_next(next_), error=error
    )
    response.set_cookie(
        LOGIN_CSRF, token, max_age=3600, path=PREFIX, httponly=True, samesite="strict"
    )
    return response


@router.get("/login")
def login_page(request: Request, next: str = PREFIX + "/") -> HTMLResponse:
    return _form(request, next)


@router.post("/login", response_model=None)
def sign_in(
    request: Request,
    name: Annotated[str, Form(max_length=64)],
    password: Annotated[str, Form(max_length=1024)],
    csrf: Annotated[str, Form(max_length=100)] = "",
    next: Annotated[str, Form(max_length=2000)] = PREFIX + "/",
) -> Response:
    expected = request.cookies.get(LOGIN_CSRF, "")
    if not expected or not hmac.compare_digest(csrf, expected):
        raise CsrfRefused
    auth = web_auth(request)
    client = request.client.host if request.client else ""
    try:
        user = auth.authenticate_password(name, password, client)
    except Unauthenticated as exc:
        return _form(request, next, 401, exc.message)
    except Saturated as exc:
        locked = _form(request, next, 429, exc.message)
        locked.headers["Retry-After"] = str(exc.details.get("retry_after", 1))
        return locked
    token, _ = auth.start(user)
    response = RedirectResponse(_safe_next(next), status_code=303)
    set_session_cookie(response, token, secure=request.url.scheme == "https")
    response.delete_cookie(LOGIN_CSRF, path=PREFIX)
    return response


@router.post("/logout")
def sign_out(viewer: Posted) -> RedirectResponse:
    viewer.auth.end(viewer.token)
    response = RedirectResponse(PREFIX + "/login", status_code=303)
    clear_session_cookie(response)
    return response


@router.post("/logout-everywhere")
def sign_out_everywhere(viewer: Posted) -> RedirectResponse:
    """End every session of this user, on every device."""
    viewer.auth.end_all(viewer.user.id)
    response = RedirectResponse(PREFIX + "/login", status_code=303)
    clear_session_cookie(response)
    return response
