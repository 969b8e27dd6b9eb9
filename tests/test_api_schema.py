"""Property-based: every operation in the OpenAPI spec, fed generated requests, passes every
schemathesis check: valid requests (positive mode) are not refused for their shape, invalid ones
(negative mode) are refused with a 4xx, and every answer has a status, content type and body its
spec declares. Key rotation and revocation run on keys made for each example, so the test's own
key survives.

A third pass poisons valid requests with what no schema can state: lone surrogates, NUL
characters, huge strings and deep nesting. Each must be refused with the one error body (413 or
422) and leave the database exactly as it was.

In process (ASGI), real SQLite, a bounded number of examples per operation.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS
from schemathesis.core.parameters import ParameterLocation

from engram import LOCAL, Engram
from engram.accounts import Scope
from engram.api import create_app
from engram.api.errors import ErrorBody
from engram.embeddings.static import StaticEmbedder
from engram.limits import MAX_BODY_BYTES, MAX_JSON_DEPTH
from engram.store.sqlite import SQLiteStore

pytestmark = pytest.mark.slow
ALL_SCOPES = [Scope.READ, Scope.WRITE, Scope.ADMIN]
EXAMPLES = 10
EXPORT = b"[2026-01-05] - Prefers green tea in the afternoon\n"
"""A valid upload: a ChatGPT memory list of one line."""
KNOWN_GAPS: dict[str, str] = {}
"""Operation -> a check that cannot hold there yet (none today: every check runs everywhere)."""


@dataclass
class Fuzzed:
    app: FastAPI
    engram: Engram
    db: Path
    token: str

    def spare_key(self) -> str:
        """A key of the test's own to rotate or revoke (the one it calls with stays)."""
        return self.engram.accounts.issue_key(LOCAL, "spare", ALL_SCOPES).key.id


@pytest.fixture
def fuzzed(tmp_path: Path, default_embedder: StaticEmbedder) -> Iterator[Fuzzed]:
    store = SQLiteStore(tmp_path / "engram.db")
    # as served: every search mode works, provider keys have a data directory to be kept in
    engram = Engram(store, embedder=default_embedder, home=tmp_path)
    engram.accounts.ensure_owner("owner")
    issued = engram.accounts.issue_key(LOCAL, "fuzz", ALL_SCOPES)
    yield Fuzzed(create_app(engram), engram, tmp_path / "engram.db", issued.token)
    engram.close()


def _hypothesis(examples: int) -> Any:
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )


def _operations(fuzzed: Fuzzed) -> list[Any]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzzed.app)
    # NUL is refused everywhere (a documented rule the poison pass covers), so valid data
    # carries none
    schema.config.generation.update(allow_x00=False)
    # the documented refusals of an oversized request count as rejecting it
    rejection = schema.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413", "414", "431"]
    return [result.ok() for result in schema.get_all_operations()]


def _check_all(fuzzed: Fuzzed, operation: Any, mode: GenerationMode) -> None:
    headers = {"Authorization": f"Bearer {fuzzed.token}"}
    gap = KNOWN_GAPS.get(operation.label)
    checks = [check for check in CHECKS.get_all() if check.__name__ != gap]

    @given(case=operation.as_strategy(generation_mode=mode))
    @_hypothesis(EXAMPLES)
    def run(case: schemathesis.Case) -> None:
        header = case.meta.components.get(ParameterLocation.HEADER) if case.meta else None
        if header is not None and header.mode.is_negative:
            return  # the test always sends its key; a missing one is the access tests' matter
        if mode is GenerationMode.POSITIVE and _reversed_period(case.body):
            return  # the one rule JSON Schema cannot state; README and field description do
        if mode is GenerationMode.POSITIVE and operation.label == "POST /api/v1/imports":
            case.body = EXPORT  # the other rule no schema states: the bytes are an export
        if mode is GenerationMode.POSITIVE and "key_id" in (case.path_parameters or {}):
            case.path_parameters = {**case.path_parameters, "key_id": fuzzed.spare_key()}
        if mode is GenerationMode.POSITIVE and case.headers and "Idempotency-Key" in case.headers:
            # generated keys repeat across unrelated cases; a client's key names one operation
            # (reusing one for another request is refused 422, tested in test_idempotency)
            case.headers = {**case.headers, "Idempotency-Key": uuid.uuid4().hex}
        case.call_and_validate(headers=headers, checks=checks)

    run()


def _reversed_period(body: Any) -> bool:
    """Whether an episode in the body ends before it starts."""
    stack = [body]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            start, end = item.get("period_start"), item.get("period_end")
            both = isinstance(start, str) and isinstance(end, str)
            if both and datetime.fromisoformat(end) < datetime.fromisoformat(start):
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def test_api_passes_every_check(fuzzed: Fuzzed) -> None:
    failures: list[str] = []
    operations = _operations(fuzzed)
    for operation in operations:
        takes_input = any((operation.query, operation.path_parameters, operation.body))
        for mode in [GenerationMode.POSITIVE] + [GenerationMode.NEGATIVE] * takes_input:
            try:
                _check_all(fuzzed, operation, mode)
            except Exception as exc:
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:3000]}")
    assert len(operations) >= 60
    assert failures == [], "\n\n".join(failures)


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": [value]}
    return value


POISON: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(["\ud800", "x \udfff y", "\udbff\udc00\udbff"]),  # lone surrogates
    st.sampled_from(["\x00", "a\x00b"]),
    st.just("x" * (MAX_BODY_BYTES // 4)),  # over every field's limit, under the body's
    st.builds(_nested, st.just(MAX_JSON_DEPTH + 8)),
)


def _slots(body: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) of a string in a JSON body."""
    found: list[tuple[Any, Any]] = []
    stack = [body]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, value in pairs:
            if isinstance(value, str):
                found.append((item, key))
            elif isinstance(value, dict | list):
                stack.append(value)
    return found


def _fingerprint(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [(t, conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]) for t in tables]


def test_poisoned_input_is_refused_and_stores_nothing(fuzzed: Fuzzed) -> None:
    headers = {"Authorization": f"Bearer {fuzzed.token}"}
    failures: list[str] = []
    poisoned = 0
    for operation in _operations(fuzzed):
        if operation.method.upper() not in ("POST", "PUT", "PATCH"):
            continue

        @given(case=operation.as_strategy(), poison=POISON, pick=st.integers(0, 1000))
        @_hypothesis(6)
        def run(case: schemathesis.Case, poison: Any, pick: int) -> None:
            nonlocal poisoned
            if not isinstance(case.body, dict | list) or not _slots(case.body):
                return
            container, key = (slots := _slots(case.body))[pick % len(slots)]
            container[key] = poison
            before = _fingerprint(fuzzed.db)
            response = case.call(headers=headers)
            poisoned += 1
            assert response.status_code in (413, 422), (response.status_code, response.text)
            ErrorBody.model_validate_json(response.content)
            assert _fingerprint(fuzzed.db) == before, "a refused request changed the store"

        try:
            run()
        except Exception as exc:
            failures.append(f"{operation.label}: {str(exc)[:2000]}")
    assert poisoned >= 50
    assert failures == [], "\n\n".join(failures)
