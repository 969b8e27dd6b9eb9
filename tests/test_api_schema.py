"""Property-based: every operation in the OpenAPI spec, fed generated requests, answers without
a 5xx and with a status code, content type and body its spec declares. In process (ASGI), real
SQLite, a bounded number of examples per operation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from engram import LOCAL, Engram
from engram.accounts import Scope
from engram.api import create_app
from engram.store.sqlite import SQLiteStore

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
_TOKEN: dict[str, str] = {}


@pytest.fixture
def api_app(tmp_path: Path) -> Iterator[FastAPI]:
    store = SQLiteStore(tmp_path / "engram.db")
    engram = Engram(store)
    engram.accounts.ensure_owner("owner")
    issued = engram.accounts.issue_key(LOCAL, "fuzz", [Scope.READ, Scope.WRITE, Scope.ADMIN])
    _TOKEN["value"] = issued.token
    yield create_app(engram)
    engram.close()


@pytest.mark.slow
def test_api_conforms_to_its_schema(api_app: FastAPI) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", api_app)
    headers = {"Authorization": f"Bearer {_TOKEN['value']}"}
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def run(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            run()
        except Exception as exc:
            failures.append(f"{operation.label}: {str(exc)[:2000]}")
    assert operations >= 60
    assert failures == [], "\n\n".join(failures)
