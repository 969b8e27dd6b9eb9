"""FastAPI dependencies, as ``Annotated`` aliases the routers declare (and tests may override):
``EngramDep`` is the service, ``ActorDep`` the authenticated caller."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from engram.actors import LOCAL_USER, Actor
from engram.capture.which import PROJECT_HEADER, PROJECT_PATTERN
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
    "directory name): the environment used when the request names none, created on first use "
    "with a writing key. An explicit 'environment' always wins; without either, your default "
    "environment."
)
ProjectHeader = Annotated[
    str | None,
    Header(
        alias=PROJECT_HEADER,
        max_length=64,
        pattern=PROJECT_PATTERN,
        description=PROJECT_DESCRIPTION,
    ),
]


def get_actor(
    engram: EngramDep,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    project: ProjectHeader = None,
) -> Actor:
    if not settings.auth:
        actor = Actor(LOCAL_USER, "api")
    elif credentials is None:
        raise Unauthenticated("missing API key: send 'Authorization: Bearer egm_…'")
    else:
        actor = engram.accounts.authenticate(credentials.credentials, "api")
    return replace(actor, project=project) if project else actor


ActorDep = Annotated[Actor, Depends(get_actor)]
