"""API keys and accounts from the command line: engram keys list|create|rotate|revoke|grants
and engram users list|add|passwd|delete, plus the owner bootstrap that ``engram init`` and
``engram serve`` share. ``grants`` lists the remote MCP clients signed in through OAuth;
``revoke`` takes a key id or a grant id (``grt_…``)."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import Annotated

import typer

from engram.accounts import IssuedKey, Scope
from engram.cli.common import JsonOption, console, emit_json, service, user_id
from engram.cli.erasure import print_erased
from engram.cli.tables import memory_table
from engram.service import Engram
from engram.service.accounts import TOKEN_FILE
from engram.service.oauth import GRANT_PREFIX

app = typer.Typer(
    help="API keys (list, create, rotate, revoke) and OAuth grants (grants, revoke grt_…).",
    no_args_is_help=True,
)
users_app = typer.Typer(
    help="Accounts: list, add and delete users, set a password.", no_args_is_help=True
)


def bootstrap(engram: Engram, home: Path, *, rotate: bool = False) -> IssuedKey | None:
    """The owner bootstrap of ``engram init`` and ``engram serve``
    (:meth:`~engram.service.accounts.AccountService.bootstrap_owner`): the owner is named after
    the system user and their token lives in ``<home>/token``."""
    return engram.accounts.bootstrap_owner(
        getpass.getuser() or "owner", home / TOKEN_FILE, rotate=rotate
    )


@app.command("list")
def list_(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option(help="A user's name or id, or '*' for everyone.")
    ] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List keys (never their tokens)."""
    with service(ctx) as (engram, st):
        who = None if user is None else user_id(engram, user, st.actor)
        keys = engram.accounts.list_keys(st.actor, who)
    if as_json:
        emit_json(keys)
        return
    rows = [
        {
            "id": k.id,
            "user": k.user_id,
            "name": k.name,
            "prefix": k.prefix + "…",
            "scopes": ",".join(k.scopes),
            "last used": k.last_used_at.isoformat(timespec="seconds")
            if k.last_used_at
            else "never",
            "revoked": k.revoked_at.isoformat(timespec="seconds") if k.revoked_at else "",
        }
        for k in keys
    ]
    wide = ("id", "user", "name", "prefix", "scopes", "last used", "revoked")
    # the id whole at any width: 'keys revoke' takes it
    console.print(memory_table(rows, wide, ("id", "name", "scopes", "revoked"), fold="name"))


def _print_issued(issued: IssuedKey, as_json: bool) -> None:
    if as_json:
        emit_json(issued)
        return
    console.print(f"key {issued.key.id} for {issued.key.user_id} ({', '.join(issued.key.scopes)})")
    console.print("token (shown once, store it now):")
    typer.echo(issued.token)


@app.command()
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="What the key is for, e.g. 'laptop-claude'.")],
    scope: Annotated[
        list[Scope] | None, typer.Option("--scope", "-s", help="Repeatable (default read, write).")
    ] = None,
    user: Annotated[str | None, typer.Option(help="Another user's name or id (admins).")] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Create a key; its token is printed once."""
    with service(ctx) as (engram, st):
        scopes = scope or [Scope.READ, Scope.WRITE]
        who = None if user is None else user_id(engram, user, st.actor)
        issued = engram.accounts.issue_key(st.actor, name, scopes, user_id=who)
    _print_issued(issued, as_json)


@app.command()
def rotate(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument()],
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Replace a key's token; the old token stops working at once."""
    with service(ctx) as (engram, st):
        issued = engram.accounts.rotate_key(key_id, st.actor)
    _print_issued(issued, as_json)


@app.command()
def revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(help="A key id (key_…) or an OAuth grant id (grt_…).")],
) -> None:
    """Revoke a key, or an OAuth grant (its tokens), at once."""
    with service(ctx) as (engram, st):
        if key_id.startswith(GRANT_PREFIX):
            grant = engram.oauth.revoke_grant(key_id, st.actor)
            console.print(f"revoked grant {grant.id} ({grant.client_name})")
            return
        key = engram.accounts.revoke_key(key_id, st.actor)
    console.print(f"revoked {key.id} ({key.name})")


@app.command()
def grants(
    ctx: typer.Context,
    user: Annotated[
        str | None, typer.Option(help="A user's name or id, or '*' for everyone.")
    ] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List OAuth grants: the remote MCP clients (Claude.ai, ChatGPT...) signed in to /mcp.
    Revoke one with 'engram keys revoke grt_…'."""
    with service(ctx) as (engram, st):
        who = None if user is None else user_id(engram, user, st.actor)
        found = engram.oauth.list_grants(st.actor, who)
    if as_json:
        emit_json(found)
        return
    rows = [
        {
            "id": g.id,
            "user": g.user_id,
            "client": g.client_name,
            "scopes": ",".join(g.scopes),
            "granted": g.created_at.isoformat(timespec="seconds"),
            "revoked": g.revoked_at.isoformat(timespec="seconds") if g.revoked_at else "",
        }
        for g in found
    ]
    wide = ("id", "user", "client", "scopes", "granted", "revoked")
    # the id whole at any width: 'keys revoke grt_…' takes it (it was cut at 80 columns)
    console.print(memory_table(rows, wide, ("id", "client", "revoked"), fold="client"))


@users_app.command("list")
def users_list(ctx: typer.Context, as_json: Annotated[bool, JsonOption] = False) -> None:
    """List accounts."""
    with service(ctx) as (engram, st):
        users = engram.accounts.list_users(st.actor)
    if as_json:
        emit_json(users)
        return
    rows = [
        {
            "id": u.id,
            "name": u.name,
            "admin": "yes" if u.is_admin else "",
            "created": u.created_at.date().isoformat(),
        }
        for u in users
    ]
    cols = ("id", "name", "admin", "created")
    console.print(memory_table(rows, cols, cols, fold="name"))


@users_app.command("add")
def users_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument()],
    admin: Annotated[bool, typer.Option("--admin", help="May manage users and keys.")] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Create an account and a first read/write key for it (token printed once)."""
    with service(ctx) as (engram, st):
        user = engram.accounts.create_user(name, st.actor, is_admin=admin)
        issued = engram.accounts.issue_key(st.actor, "default", user_id=user.id)
    if as_json:
        emit_json({"user": user, "key": issued})
        return
    console.print(f"created user {user.name} ({user.id})")
    _print_issued(issued, False)


@users_app.command("passwd")
def users_passwd(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="The user's name or id (default: the owner).")] = "",
    stdin: Annotated[
        bool,
        typer.Option(
            "--stdin", "--password-stdin", help="Read the password from standard input (scripts)."
        ),
    ] = False,
) -> None:
    """Set a user's password (stored as an Argon2id hash; at least 8 characters): what they sign
    in with on the web dashboard (/ui) and on the OAuth page remote MCP clients open (Claude.ai,
    ChatGPT). Their dashboard sessions end. Asks twice unless --stdin."""
    if stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("New password", hide_input=True, confirmation_prompt=True)
    with service(ctx) as (engram, st):
        found = engram.accounts.find_user(user or st.actor.user_id, st.actor)
        engram.accounts.set_password(found.id, password, st.actor)
        ended = engram.web_sessions.end_all(found.id)  # as the dashboard's users screen does
    console.print(f"password set for {found.name} ({found.id}); sign in at /ui on engram serve")
    if ended:
        console.print(f"ended {ended} dashboard session(s) of {found.name}")


@users_app.command("delete")
def users_delete(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also remove, for good, the environments they own (memories, versions, "
            "vectors, conversations, captured sessions), their conversations elsewhere and "
            "the memories they wrote there.",
        ),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Delete an account: its keys, memberships and Soul layer (admins). Refused while they
    own environments or conversations, unless --purge. Prints what was removed and what
    remains (audit entries hold ids, not content; backups made before are untouched)."""
    if purge and not yes:
        typer.confirm(f"Remove {user!r} and everything that is theirs for good?", abort=True)
    with service(ctx) as (engram, st):
        erased = engram.erasure.delete_user(user_id(engram, user, st.actor), st.actor, purge=purge)
    print_erased(erased, as_json)
