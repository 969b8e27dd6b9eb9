"""FastAPI dependencies, as ``Annotated`` aliases the routers declare (and tests may override):
``EngramDep`` is the service, ``ActorDep`` the authenticated caller."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from engram.actors import LOCAL_USER, Actor
from engram.capture.which import PROJECT_HEADER, PROJECT_MAX_CHARS, PROJECT_PATTERN
from engram.config import ServerSettings
from engram.errors import Unauthenticated
from engram.service import Engram

_bearer = HTTPBearer(
    auto_error=False, description="An Engram API key: 'Authorization: Bearer egm_…'"
)


def get_engram(request: Request) -> Engram:
    engram: Engram = request.app.state.engram
    return engram


def get_settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.settings
    return settings


EngramDep = Annotated[Engram, Depends(get_engram)]
SettingsDep = Annotated[ServerSettings, Depends(get_settings)]


PROJECT_DESCRIPTION = (
    "The project the client works in (its .engram.toml environment, else its git root's "
    "directory name): the environment used when the request names none, your own of that name "
    "(created on first use with a writing key), or 'owner/name' for one shared with you (it "
    "must exist). An explicit 'environment' always wins; without either, your default "
    "environment."
)
ProjectHeader = Annotated[
    str | None,
    Header(
        alias=PROJECT_HEADER,
        max_length=PROJECT_MAX_CHARS,
        pattern=PROJECT_PATTERN,
        description=PROJECT_DESCRIPTION,
    ),
]


def bearer_token(authorization: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer …`` header (None: absent or another
    scheme), as :class:`~fastapi.security.HTTPBearer` reads it."""
    scheme, credentials = get_authorization_scheme_param(authorization)
    if not (authorization and scheme and credentials) or scheme.lower() != "bearer":
        return None
    return credentials


def authenticate(
    engram: Engram, settings: ServerSettings, token: str | None, project: str | None
) -> Actor:
    """The caller of a REST request: its API key's actor (the owner without auth), working
    in ``project`` when the client named one."""
    if not settings.auth:
        actor = Actor(LOCAL_USER, "api")
    elif token is None:
        raise Unauthenticated("missing API key: send 'Authorization: Bearer egm_…'")
    else:
        actor = engram.accounts.authenticate(token, "api")
    return replace(actor, project=project) if project else actor


def get_actor(
    engram: EngramDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    project: ProjectHeader = None,
) -> Actor:
    token = None if credentials is None else credentials.credentials
    return authenticate(engram, settings, token, project)


ActorDep = Annotated[Actor, Depends(get_actor)]
