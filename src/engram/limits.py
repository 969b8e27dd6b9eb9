"""Every limit on what a caller may send, declared once.

The pydantic input models state these limits (so the OpenAPI schema carries them as
``maxLength``, ``maxItems``, ``maximum``...), the service layer checks the same constants, and
the REST edge enforces the HTTP-level ones (URL, headers, body size). The README's "Limits"
section lists them.

Text anywhere in an input must be Unicode scalar text: no lone surrogates (``"\\ud800"``, which
no UTF-8 store can hold) and no NUL characters (which PostgreSQL text cannot hold). Every input
model derives from :class:`InputModel`, which checks every string, key and nesting level of what
it is given before any field is validated, so REST, MCP, the CLI and the SDK all refuse such
input with the same message.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

# -- memories ----------------------------------------------------------------------------------
MAX_CONTENT_CHARS = 20_000
"""A memory's content, a message's content, a keyword context (after trimming whitespace)."""
MAX_TAGS = 32
MAX_TAG_CHARS = 64
MAX_AUTHOR_CHARS = 200
MAX_THREAD_CHARS = 200
MAX_REASON_CHARS = 1000
"""A reason or a note kept in the history."""
MAX_TITLE_CHARS = 500
MAX_NAME_CHARS = 200
"""A procedure's name; also the free-text items of an episode or procedure."""
MAX_TRIGGER_CHARS = 2000
MAX_STEPS = 100
MAX_LIST_ITEMS = 100
"""Participants, key decisions, open questions of an episode."""

# -- metadata (any JSON object) ----------------------------------------------------------------
MAX_METADATA_BYTES = 16_384
"""A metadata object serialized as compact JSON, in UTF-8 bytes."""
MAX_METADATA_KEYS = 64
MAX_METADATA_DEPTH = 8
"""Nesting levels inside a metadata object (the object itself is level 1)."""
MAX_JSON_DEPTH = 32
"""Nesting levels of any request body."""

# -- batches and pages -------------------------------------------------------------------------
MAX_BULK = 1000
"""Memories in one bulk create, edit, delete or purge."""
MAX_MESSAGES = 5000
"""Messages in one extraction or append call."""
MAX_PAGE = 1000
"""Memories in one page of a listing."""
MAX_FILTER_VALUES = 50
"""Values of one list filter (tags, categories, threads) in a listing or search."""
MAX_QUERY_CHARS = 4000
"""A search or context query (the service's limit, declared as such by REST and MCP)."""
MAX_SEARCH_RESULTS = 200
"""Results of one search."""
MAX_ENVIRONMENT_REF_CHARS = 200
"""An environment as a caller names it (its name or id)."""
MAX_POSITION = 2**53 - 1
"""The largest integer a parameter takes (a message position, ``after``): exact in JSON."""

# -- context -----------------------------------------------------------------------------------
MIN_CONTEXT_TOKENS = 64
MAX_CONTEXT_TOKENS = 200_000

# -- HTTP --------------------------------------------------------------------------------------
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_IMPORT_BYTES = 2 * 1024 * 1024 * 1024
"""An uploaded export (POST /api/v1/imports), as large as ``engram import`` reads."""
IMPORT_UPLOAD_PATH = "/api/v1/imports"
"""A request body; larger is 413."""
MAX_URL_BYTES = 16_384
"""Path and query string of a request; longer is 414."""
MAX_HEADER_BYTES = 32_768
"""All request headers together; more is 431."""
MAX_REQUEST_HEAD_BYTES = 1024 * 1024
"""What the HTTP parser buffers of a request line and headers before it gives up (431)."""


SPACE = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)
"""What counts as whitespace when text is trimmed: JSON Schema's (ECMAScript's) ``\\s``, so a
schema ``pattern`` and the server agree on what is blank."""
SPACE_CLASS = "".join(f"\\u{ord(c):04x}" for c in SPACE)
""":data:`SPACE` as the inside of a regex character class, the same in Python and JSON Schema."""
BLANK_CLASS = SPACE_CLASS + r"\u001c-\u001f\u0085"
"""What is blank by either measure, JSON Schema's ``\\s`` or Python's ``str.isspace``, as the
inside of a character class."""
NONBLANK_PATTERN = rf"[^{BLANK_CLASS}]"
"""A schema ``pattern`` for text with a character that is not blank by either measure: what
passes it, ``str.strip()`` leaves non-empty."""


def text_problem(value: Any) -> str | None:
    """Why ``value`` (any JSON-shaped data) is not acceptable text, or None if it is.

    Walks every string and key without recursion, so nesting deeper than
    :data:`MAX_JSON_DEPTH` is reported rather than overflowing the stack."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem:
                return f"{where or 'input'}: {problem}"
        elif isinstance(item, dict | list | tuple):
            if depth >= MAX_JSON_DEPTH:
                return f"{where or 'input'}: nested deeper than {MAX_JSON_DEPTH} levels"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(key, str) and (problem := _string_problem(key)):
                    return f"{where or 'input'}: a key {problem}"
                stack.append((child, f"{where}.{key}" if where else str(key), depth + 1))
    return None


def _string_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"holds a lone surrogate (U+{ord(text[exc.start]):04X}) at character {exc.start}: "
            "text must be valid Unicode"
        )
    if "\x00" in text:
        return f"holds a NUL character at character {text.index(chr(0))}: NUL is not allowed"
    return None


class InputModel(BaseModel):
    """The base of every model a caller fills in: unknown fields are refused, and so is text
    that is not valid Unicode scalar text (see :func:`text_problem`)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _scalar_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and (problem := text_problem(data)):
            raise ValueError(problem)
        return data


def check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """A metadata object within :data:`MAX_METADATA_KEYS`, :data:`MAX_METADATA_DEPTH` and
    :data:`MAX_METADATA_BYTES`."""
    if len(value) > MAX_METADATA_KEYS:
        raise ValueError(f"metadata has {len(value)} keys; the limit is {MAX_METADATA_KEYS}")
    depth = _depth(value)
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(
            f"metadata is nested {depth} levels deep; the limit is {MAX_METADATA_DEPTH}"
        )
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"metadata is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}")
    return value


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend(
                (child, level + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


_TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:$|[Tt ]\d{2}:\d{2})")


def _timestamp(value: Any) -> Any:
    if isinstance(value, datetime) or (isinstance(value, str) and _TIMESTAMP_RE.match(value)):
        return value
    raise ValueError(f"expected an ISO 8601 date-time such as 2026-01-31T09:00:00Z, got {value!r}")


Metadata = Annotated[
    dict[str, Any],
    BeforeValidator(lambda v: check_metadata(v) if isinstance(v, dict) else v),
    Field(
        json_schema_extra={"maxProperties": MAX_METADATA_KEYS},  # checked by check_metadata
        description=f"Any JSON object: at most {MAX_METADATA_KEYS} keys, {MAX_METADATA_DEPTH} "
        f"levels deep and {MAX_METADATA_BYTES} bytes as compact JSON.",
    ),
]
"""A caller's metadata object, bounded."""


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Timestamp = Annotated[datetime, BeforeValidator(_timestamp), AfterValidator(_aware)]
"""A date-time given as a datetime or an ISO 8601 string (a date alone is its midnight; without
a zone, UTC): never a number, and always with its zone (a naive time compared with a stored
one would fail)."""


def _json_number(value: Any) -> Any:
    if isinstance(value, bool | str):
        raise ValueError(f"expected a JSON number, got {value!r}")
    return value


JSON_NUMBER = BeforeValidator(_json_number)
"""Refuses booleans and strings for a number; put it after any bounds in an ``Annotated``
so that the schema keeps them as ``minimum``/``maximum``."""
StrictInt = Annotated[int, JSON_NUMBER]
"""An integer sent as a JSON number (``3`` or ``3.0``; not ``true``, ``"3"`` or ``3.5``)."""
StrictFloat = Annotated[float, JSON_NUMBER]
"""A number sent as a JSON number (not ``true`` or ``"0.5"``)."""
