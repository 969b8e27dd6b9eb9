"""A real PostgreSQL 16 + pgvector for the tests, from the ``pgserver`` package (dev extra).

One server per test session, in a temporary directory, stopped and deleted at the end. The
schema is migrated once into a template database; each test gets a fresh copy
(``CREATE DATABASE … TEMPLATE``), dropped afterwards. Set ``ENGRAM_TEST_POSTGRES_URL`` to an
existing server's admin URL (a role that may create databases) to use it instead.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

if TYPE_CHECKING:
    from pgserver.postgres_server import PostgresServer

TEMPLATE = "engram_test_template"


def _start_pgserver(tmp: Path) -> tuple[str, PostgresServer]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from pgserver.postgres_server import get_server

        server = get_server(tmp, cleanup_mode="delete")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        # a throwaway server: durability is not what these tests check
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
    return url, server


def database_url(admin_url: str, name: str) -> str:
    """``admin_url`` (a postgresql:// URL) naming database ``name`` instead."""
    return urlsplit(admin_url)._replace(path="/" + name).geturl()


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """The admin URL of a running PostgreSQL with pgvector and a migrated template database."""
    configured = os.environ.get("ENGRAM_TEST_POSTGRES_URL")
    server: PostgresServer | None = None
    tmp: Path | None = None
    if configured:
        url = configured
    else:
        tmp = Path(tempfile.mkdtemp(prefix="engram-pg-"))
        url, server = _start_pgserver(tmp / "data")
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
        from engram.store.postgres.db import PostgresDatabase

        PostgresDatabase(database_url(url, TEMPLATE)).close()
        yield url
    finally:
        if server is not None:
            server._cleanup()  # stops the server, deletes its data
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def fresh_database(admin_url: str, prefix: str = "engram_test_") -> Iterator[str]:
    """A fresh, migrated database (a copy of the template) for the block, dropped afterwards."""
    name = prefix + uuid.uuid4().hex[:12]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    try:
        yield database_url(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture
def pg_url(pg_admin_url: str) -> Iterator[str]:
    """A fresh, migrated database for one test, dropped afterwards."""
    with fresh_database(pg_admin_url) as url:
        yield url
