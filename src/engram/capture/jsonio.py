"""JSON for the hook client, straight over the C accelerator ``_json`` that the ``json`` package
itself uses: importing ``json`` also imports ``re`` (and with it ``enum``, ``functools``…), about
as much CPU as starting the interpreter, for a process that decodes one payload and encodes one
event. Where ``_json`` is missing (another Python), the ``json`` package does the work.

:func:`loads` and :func:`dumps` give what ``json.loads`` / ``json.dumps`` give for the same input
(``tests/test_capture_units.py`` compares them); a decoding error is a ``ValueError`` (the
``json.JSONDecodeError`` itself, from the first error on).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """What ``_json.make_scanner`` reads off a decoder: the defaults of ``json.loads``."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


try:
    import _json

    _context: Any = _Context()  # (the stubs want a decoder; its attributes are what is read)
    _scan: Callable[[str, int], tuple[Any, int]] | None = _json.make_scanner(_context)
    _quote: Callable[[str], str] | None = _json.encode_basestring
    _quote_ascii: Callable[[str], str] | None = _json.encode_basestring_ascii
    _make_encoder: Any = _json.make_encoder
except (ImportError, AttributeError, TypeError):  # pragma: no cover - CPython has it
    _scan = _quote = _quote_ascii = _make_encoder = None


def loads(data: bytes | str) -> Any:
    """The JSON value in ``data`` (UTF-8 bytes, a byte-order mark allowed, or text)."""
    if isinstance(data, bytes | bytearray):
        text = bytes(data[3:] if data[:3] == b"\xef\xbb\xbf" else data).decode("utf-8")
    else:
        text = data
    if _scan is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except (StopIteration, SystemError):
        # SystemError: the scanner raises json.decoder.JSONDecodeError only once json.decoder
        # is loaded (it looks in sys.modules), so the first error comes from json itself
        return _error(text)
    if text[end:].strip(_WHITESPACE):
        return _error(text)
    return value


def _error(text: str) -> Any:
    import json  # the error message and position json.loads gives

    return json.loads(text)


def _no_default(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(
    value: Any,
    *,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    ascii: bool = False,
) -> str:
    """``value`` as compact-spaced JSON text, as ``json.dumps(value, ensure_ascii=ascii,
    sort_keys=sort_keys, default=default)``."""
    if _make_encoder is None or _quote is None or _quote_ascii is None:
        import json

        return json.dumps(value, ensure_ascii=ascii, sort_keys=sort_keys, default=default)
    if isinstance(value, str):
        return (_quote_ascii if ascii else _quote)(value)
    encode = _make_encoder(
        {},  # markers: a circular structure is a ValueError, as in json
        default or _no_default,
        _quote_ascii if ascii else _quote,
        None,  # indent
        ": ",
        ", ",
        sort_keys,
        False,  # skipkeys
        True,  # allow_nan
    )
    return "".join(encode(value, 0))
