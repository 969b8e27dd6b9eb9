"""API keys and accounts from the command line: engram keys list|create|rotate|revoke and
engram users list|add|delete, plus the owner bootstrap that ``engram init`` and ``engram serve``
share."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from engram.accounts import IssuedKey, Scope
from engram.actors import LOCAL
from engram.cli.common import JsonOption, console, emit_json, service
from engram.cli.erasure import print_erased
from engram.errors import Unauthenticated
from engram.private_files import write_private
from engram.service import Engram
from engram.service.accounts import TOKEN_FILE

app = typer.Typer(help="API keys: list, create, rotate, revoke.", no_args_is_help=True)
users_app = typer.Typer(help="Accounts: list, add and delete users.", no_args_is_help=True)


def bootstrap(engram: Engram, home: Path, *, rotate: bool = False) -> IssuedKey | None:
    """Make sure the owner account exists and ``<home>/token`` (mode 0600) holds a working key
    of theirs. Returns the key issued now, or None when the token file already worked."""
    engram.accounts.ensure_owner(getpass.getuser() or "owner")
    path = home / TOKEN_FILE
    old = path.read_text().strip() if path.exists() else ""
    current = None
    if old:
        try:
            current = engram.accounts.authenticate(old, "local")
        except Unauthenticated:
            current = None
    if current is not None and not rotate:
        return None
    if current is not None and current.key_id is not None:
        issued = engram.accounts.rotate_key(current.key_id, LOCAL)
    else:
        scopes = [Scope.READ, Scope.WRITE, Scope.ADMIN]
        issued = engram.accounts.issue_key(LOCAL, "cli", scopes)
    write_private(path, issued.token + "\n")
    return issued


@app.command("list")
def list_(
    ctx: typer.Context,
    user: Annotated[str | None, typer.Option(help="A user id, or '*' for everyone.")] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """List keys (never their tokens)."""
    with service(ctx) as (engram, st):
        keys = engram.accounts.list_keys(st.actor, user)
    if as_json:
        emit_json(keys)
        return
    table = Table()
    for col in ("id", "user", "name", "prefix", "scopes", "last used", "revoked"):
        table.add_column(col)
    for k in keys:
        table.add_row(
            k.id,
            k.user_id,
            k.name,
            k.prefix + "…",
            ",".join(k.scopes),
            k.last_used_at.isoformat(timespec="seconds") if k.last_used_at else "never",
            k.revoked_at.isoformat(timespec="seconds") if k.revoked_at else "",
        )
    console.print(table)


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
    user: Annotated[str | None, typer.Option(help="Another user's id (admins).")] = None,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Create a key; its token is printed once."""
    with service(ctx) as (engram, st):
        scopes = scope or [Scope.READ, Scope.WRITE]
        issued = engram.accounts.issue_key(st.actor, name, scopes, user_id=user)
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
def revoke(ctx: typer.Context, key_id: Annotated[str, typer.Argument()]) -> None:
    """Revoke a key at once."""
    with service(ctx) as (engram, st):
        key = engram.accounts.revoke_key(key_id, st.actor)
    console.print(f"revoked {key.id} ({key.name})")


@users_app.command("list")
def users_list(ctx: typer.Context, as_json: Annotated[bool, JsonOption] = False) -> None:
    """List accounts."""
    with service(ctx) as (engram, st):
        users = engram.accounts.list_users(st.actor)
    if as_json:
        emit_json(users)
        return
    table = Table()
    for col in ("id", "name", "admin", "created"):
        table.add_column(col)
    for u in users:
        table.add_row(u.id, u.name, "yes" if u.is_admin else "", u.created_at.date().isoformat())
    console.print(table)


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


@users_app.command("delete")
def users_delete(
    ctx: typer.Context,
    user: Annotated[str, typer.Argument(help="The user's id.")],
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
        erased = engram.erasure.delete_user(user, st.actor, purge=purge)
    print_erased(erased, as_json)
