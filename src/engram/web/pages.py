"""What every dashboard screen shares: the signed-in viewer (a FastAPI dependency), the CSRF
check on every form, and rendering a template.

A screen is one module with a ``router``; its handlers take :data:`Signed` (a GET) or
:data:`Posted` (a form: the CSRF token checked first) and call the same services as the REST
API, with the viewer's actor, so every role and scope rule applies unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar
from urllib.parse import quote

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ValidationError

from engram.accounts import Role, Scope, User
from engram.actors import Actor
from engram.errors import EngramError, InvalidInput, NotFound, PermissionDenied, validation_lines
from engram.models import Environment
from engram.service import Engram
from engram.web.session import Session, WebAuth, actor_for, session_token

PREFIX = "/ui"
HERE = Path(__file__).parent
M = TypeVar("M", bound=BaseModel)


class SignInRequired(Exception):
    """No live session: the browser goes to the sign-in page."""


class CsrfRefused(PermissionDenied):
    def __init__(self) -> None:
        super().__init__("this form is missing its CSRF token, or it is stale: reload the page")


@dataclass(frozen=True)
class Viewer:
    """The signed-in user of one request, in the environment they switched to."""

    engram: Engram
    auth: WebAuth
    user: User
    actor: Actor
    session: Session
    token: str
    environment: Environment
    role: Role
    lost_access: bool = False
    """The environment this session was in is no longer the viewer's (unshared, deleted)."""

    @property
    def env_label(self) -> str:
        """The current environment as the viewer names it: its name, or ``owner/name`` for
        one shared with them (two of one name are told apart)."""
        return self.engram.environments.label(self.environment, self.actor)

    @property
    def can_write(self) -> bool:
        return self.role.allows(Role.WRITER) and self.actor.can(Scope.WRITE)

    @property
    def is_admin(self) -> bool:
        return self.actor.can(Scope.ADMIN)


def web_auth(request: Request) -> WebAuth:
    auth: WebAuth = request.app.state.web_auth
    return auth


def _viewer(request: Request) -> Viewer:
    auth = web_auth(request)
    token = session_token(request)
    session = auth.get(token)
    user = None if session is None else auth.user(session)
    if token is None or session is None or user is None:
        raise SignInRequired
    engram: Engram = request.app.state.engram
    actor = actor_for(user)
    envs = engram.environments
    lost = False
    try:
        env = envs.resolve(session.environment, actor)
    except (NotFound, PermissionDenied):  # unshared (or deleted) since: back to the default,
        env = envs.resolve(None, actor)  # said once on the page that shows it
        auth.switch(token, env.id)
        lost = session.environment is not None
    role = envs.role_of(env, actor) or Role.READER
    return Viewer(engram, auth, user, actor, session, token, env, role, lost)


async def _posted(request: Request) -> Viewer:
    viewer = _viewer(request)
    form = await request.form()
    if not viewer.auth.csrf_matches(viewer.session, form.get("csrf")):
        raise CsrfRefused
    return viewer


Signed = Annotated[Viewer, Depends(_viewer)]
"""A page for a signed-in user (otherwise: a redirect to the sign-in page)."""
Posted = Annotated[Viewer, Depends(_posted)]
"""A form from a signed-in user whose CSRF token matches their session (otherwise: 403)."""


def render(
    request: Request, viewer: Viewer | None, template: str, status: int = 200, **context: Any
) -> HTMLResponse:
    envs: list[tuple[Environment, Role, str]] = []
    if viewer is not None:
        service = viewer.engram.environments
        roles = service.roles(viewer.actor)
        envs = [
            (e, roles.get(e.id, Role.READER), service.label(e, viewer.actor))
            for e in service.list(viewer.actor)
        ]
    templates: Jinja2Templates = request.app.state.web_templates
    return templates.TemplateResponse(
        request,
        template,
        {"viewer": viewer, "envs": envs, "prefix": PREFIX, **context},
        status_code=status,
    )


def redirect(path: str, **query: str) -> RedirectResponse:
    """A 303 to a dashboard path (after a form: the browser GETs it)."""
    url = PREFIX + path
    if query:
        url += "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items() if v)
    return RedirectResponse(url, status_code=303)


def error_page(request: Request, exc: EngramError, status: int) -> HTMLResponse:
    try:
        viewer = _viewer(request)
    except (SignInRequired, EngramError):
        viewer = None
    return render(
        request,
        viewer,
        "error.html",
        status,
        message=exc.message,
        code=status,
        back=_section(request.url.path),
    )


def _section(path: str) -> str:
    """The dashboard page an error on ``path`` goes back to: its section (``keys`` for
    ``/ui/keys/…``), the memories for anything else."""
    section = path.removeprefix(PREFIX).strip("/").split("/")[0]
    known = {"memories", "context", "keys", "audit", "reviews", "soul", "environments"}
    known |= {"handoffs", "sessions", "transfer", "users"}
    return section if section in known else "memories"


def build(model: type[M], **fields: Any) -> M:
    """A service input from form fields, validated as the API validates its JSON: a bad field
    is an :class:`InvalidInput` naming it."""
    try:
        return model.model_validate(fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "form"
        raise InvalidInput(validation_lines([first])[0], field=where) from exc


def tags_of(text: str) -> list[str]:
    """Tags typed as ``a, b c``: split on commas and spaces, blanks dropped."""
    return [t for t in text.replace(",", " ").split() if t]
