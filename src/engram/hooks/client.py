"""``engram-hook <agent>``: read the agent's hook payload on stdin, capture it, print the
agent's output on stdout, exit 0 — always.

The event is scrubbed and bounded here, before it leaves the machine, then posted to the
server (``ENGRAM_URL``, default ``http://127.0.0.1:8765``) with any spooled events. When the
server is down, slow or saturated (429) the event goes to the owner-only spool and is
delivered with a later event. When the server refuses a batch for good (a 4xx other than 401,
408 and 429), the new event is sent alone and the spooled ones in halves, until each refused
event stands alone; those are set aside in ``rejected/`` with the reason (and logged), so one
bad event never holds back the others. Session start waits for the server's context block and prints
it in the agent's format. Any internal error prints the agent's valid empty output and is
logged to ``<home>/hooks/hook.log``.

It imports nearly nothing beyond what the interpreter loads to start: no ``json``, ``re``,
``enum``, ``dataclasses``, ``pathlib``, ``socket`` or ``datetime`` (each costs milliseconds of
CPU, and together several times the interpreter's own start), so a hook costs about what
``python -c pass`` does. A regex is compiled only when a text holds what a pattern needs.
"""

from __future__ import annotations

import os
import sys
import time

from engram.capture import vocab as K
from engram.capture.adapters import (
    command_of,
    kind_of,
    named_paths,
    read_payload,
    render_output,
    to_wire,
)
from engram.capture.bounds import START_TOKENS
from engram.capture.jsonio import loads
from engram.capture.privacy import scrub, site_scrub
from engram.capture.repo import capture_mode, find_rules
from engram.capture.which import VARIABLE, choose
from engram.hooks.paths import engram_home, hooks_dir, private_dir
from engram.hooks.spool import Spool
from engram.hooks.wire import Refused, ServerUnavailable, post_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

DEFAULT_URL = "http://127.0.0.1:8765"
EVENT_TIMEOUT_S = 1.0
START_TIMEOUT_S = 3.0
MAX_STDIN = 8 * 1024 * 1024
EVENTS_PATH = "/api/v1/capture/events"
HOOK_RETRIES = 16
"""Requests a hook may spend isolating refused spooled events (a flush spends what it needs)."""


def log(env: Mapping[str, str], message: str) -> None:
    """Append one scrubbed line to the hook log (never raises)."""
    try:
        path = os.path.join(private_dir(hooks_dir(env)), "hook.log")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            f.write(f"{stamp} {scrub(message)[:2000]}\n")
    except Exception:
        pass


def _token(env: Mapping[str, str]) -> str:
    token = env.get("ENGRAM_TOKEN", "").strip()
    if token:
        return token
    try:
        with open(os.path.join(engram_home(env), "token"), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def post(
    env: Mapping[str, str], path: str, body: Callable[[], dict[str, Any]], timeout: float
) -> dict[str, Any]:
    return post_json(env.get("ENGRAM_URL") or DEFAULT_URL, path, body, _token(env), timeout)


def _now(payload: Mapping[str, Any]) -> str:
    stamp = payload.get("timestamp")
    if isinstance(stamp, str) and stamp:
        return stamp
    return utc_stamp(time.time())


def utc_stamp(seconds: float) -> str:
    """``seconds`` since the epoch as ISO 8601 in UTC, to the millisecond (``…T10:00:00.123Z``)."""
    millis = int(seconds * 1000)
    whole = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000))
    return f"{whole}.{millis % 1000:03d}Z"


def _context_tokens(env: Mapping[str, str]) -> int | None:
    """``ENGRAM_CONTEXT_TOKENS`` clamped to the range the server takes (logged when it is out
    of range or not a number, then ignored); None when unset."""
    text = env.get("ENGRAM_CONTEXT_TOKENS", "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        log(env, f"ENGRAM_CONTEXT_TOKENS={text[:40]!r} is not a number: the default is used")
        return None
    low, high = START_TOKENS
    value = min(max(int(text), low), high)
    if value != int(text):
        log(env, f"ENGRAM_CONTEXT_TOKENS={text} is outside {low}-{high}: {value} is used")
    return value


def handle(agent: str, payload: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """Capture one payload; return what the hook prints."""
    raw = read_payload(agent, payload)
    kind = kind_of(agent, raw.hook)
    empty = render_output(agent, raw.hook)
    mode, warning = capture_mode(env.get("ENGRAM_CAPTURE"))
    if warning:
        log(env, f"{agent} {raw.hook}: {warning}")
    cwd = raw.cwd or os.getcwd()
    rules = find_rules(cwd)
    if not rules.captures(mode):
        return empty
    ref, source, _root = choose(None, env, cwd, rules)  # the rule every edge follows
    explicit = ref if source == VARIABLE else None  # ENGRAM_ENV: it must exist
    project = choose(None, {}, cwd, rules)[0] if explicit else ref  # else: created on first use
    key = f"{agent}-{os.urandom(16).hex()}"
    site = site_scrub(engram_home(env))  # <home>/scrub.toml, as the server and the CLI read it
    event = to_wire(agent, raw, at=_now(payload), key=key, cwd=cwd, project=project, scrub=site)
    if explicit:
        event["environment"] = explicit
    named = (*event["files"], *named_paths(raw.tool_input))  # a read as well as a write
    if rules.ignores(command_of(raw.tool_input), named, cwd):
        return empty
    spool = Spool(os.path.join(hooks_dir(env), "spool"))
    spooled: list[tuple[str, dict[str, Any]]] = []
    extra: dict[str, Any] = {}
    if kind == K.SESSION_START:
        path, timeout = "/api/v1/capture/session-start", START_TIMEOUT_S
        budget = _context_tokens(env)
        if budget is not None:
            extra["max_tokens"] = budget
    elif kind == K.PROMPT and env.get("ENGRAM_RECALL", "").lower() in ("1", "on"):
        path, timeout = "/api/v1/capture/prompt", START_TIMEOUT_S
    else:
        path = EVENTS_PATH
        timeout = float(env.get("ENGRAM_HOOK_TIMEOUT") or EVENT_TIMEOUT_S)

    def body() -> dict[str, Any]:  # once connected: with what the spool holds
        spooled.extend(spool.take())
        return {"events": [event, *(e for _, e in spooled)], **extra}

    def keep(exc: Exception) -> None:
        if not spool.put(event):
            log(env, f"spool full: dropped a {kind} event of {agent}")
        log(env, f"{agent} {raw.hook}: spooled ({exc})")

    def refused(exc: Refused) -> dict[str, Any]:  # the new event, alone, refused for good
        nonlocal event
        fallback = _in_project(env, event, exc)
        if fallback is None:
            _reject(env, spool, None, event, exc)
            return {}
        event = fallback
        try:
            return post(env, path, lambda: {"events": [event], **extra}, timeout)
        except ServerUnavailable as again:
            keep(again)
        except Refused as again:
            _reject(env, spool, None, event, again)
        return {}

    try:
        answer = post(env, path, body, timeout)
    except ServerUnavailable as exc:
        keep(exc)
        return empty
    except Refused as exc:  # one event in the batch can never be taken: find which
        answer = {}
        if not spooled:
            answer = refused(exc)
        else:
            try:
                answer = post(env, path, lambda: {"events": [event], **extra}, timeout)
            except ServerUnavailable as again:
                keep(again)
            except Refused as again:
                answer = refused(again)
            _isolate(env, spool, spooled, timeout, budget=HOOK_RETRIES)
    else:
        spool.delivered([p for p, _ in spooled])
    context = answer.get("context")
    return render_output(agent, raw.hook, context if isinstance(context, str) else "")


def _in_project(
    env: Mapping[str, str], event: dict[str, Any], exc: Refused
) -> dict[str, Any] | None:
    """``event`` in its project's environment instead of the one ``ENGRAM_ENV`` named, which
    the server refused (logged; the hook never creates an environment from a mistyped name, as
    no edge does); None for an event that named none."""
    name = event.get("environment")
    if not name:
        return None
    log(
        env,
        f"{event.get('agent')} {event.get('hook')}: ENGRAM_ENV={name!r} was refused ({exc}); "
        f"captured in the project's environment ({event.get('project') or 'the default'}) "
        "instead",
    )
    return {k: v for k, v in event.items() if k != "environment"}


def _reject(
    env: Mapping[str, str], spool: Spool, path: str | None, event: dict[str, Any], exc: Refused
) -> bool:
    """Set ``event`` aside (logged); an event whose ``ENGRAM_ENV`` environment was refused is
    spooled again in its project's environment instead (False: it was not set aside)."""
    fallback = _in_project(env, event, exc)
    if fallback is not None:
        spool.put({**fallback, "key": f"{str(event.get('key'))[:96]}-prj"})
        if path is not None:
            spool.delivered([path])
        return False
    kept = spool.reject(path, event, str(exc))
    where = f"set aside in {spool.rejected_dir}" if kept else "dropped (rejected/ is full)"
    log(
        env,
        f"{event.get('agent')} {event.get('hook')}: refused by the server for good, {where} "
        f"({exc})",
    )
    return True


class Delivery:
    """What a delivery of spooled events did: how many were delivered, the reasons of those the
    server refused for good (set aside in ``rejected/``), and why the rest was not delivered
    (None when nothing was left)."""

    __slots__ = ("error", "left", "refused", "sent")

    def __init__(self) -> None:
        self.sent = 0
        self.left = 0
        self.refused: list[str] = []
        self.error: str | None = None


def _isolate(
    env: Mapping[str, str],
    spool: Spool,
    batch: list[tuple[str, dict[str, Any]]],
    timeout: float,
    *,
    budget: int | None = None,
    into: Delivery | None = None,
) -> Delivery:
    """Deliver spooled ``batch``, oldest first; a batch refused for good is sent again in
    halves until each refused event stands alone and is set aside. Stops at a server that is
    unavailable, or after ``budget`` requests (the rest stays spooled)."""
    done = into if into is not None else Delivery()
    pending = [batch] if batch else []
    while pending:
        if budget is not None:
            if budget <= 0:
                return done
            budget -= 1
        part = pending.pop(0)
        try:
            post(env, EVENTS_PATH, _events_of(part), timeout)
        except ServerUnavailable as exc:
            done.error = str(exc)
            return done
        except Refused as exc:
            if len(part) > 1:
                mid = len(part) // 2
                pending[:0] = [part[:mid], part[mid:]]
                continue
            if _reject(env, spool, part[0][0], part[0][1], exc):
                done.refused.append(str(exc))
            continue
        spool.delivered([p for p, _ in part])
        done.sent += len(part)
    return done


def flush(env: Mapping[str, str]) -> Delivery:
    """Deliver the spool in batches, setting aside the events the server refuses for good."""
    spool = Spool(os.path.join(hooks_dir(env), "spool"))
    done = Delivery()
    while done.error is None:
        batch = spool.take()
        if not batch:
            break
        _isolate(env, spool, batch, 10.0, into=done)
    if done.error is not None:
        log(env, f"flush: {done.error}")
    done.left = spool.count()
    return done


def _events_of(batch: list[tuple[str, dict[str, Any]]]) -> Callable[[], dict[str, Any]]:
    return lambda: {"events": [e for _, e in batch]}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    env = os.environ
    started = time.perf_counter()
    agent: str | None = None
    hook = ""
    try:
        agent = args[0] if args and args[0] in K.AGENTS else None
        if agent is None:
            raise ValueError(f"usage: engram-hook <{'|'.join(K.AGENTS)}>")
        data = sys.stdin.buffer.read(MAX_STDIN)
        payload = loads(data or b"{}")
        if not isinstance(payload, dict):
            raise ValueError("the hook payload is not a JSON object")
        hook = str(payload.get("hook_event_name") or "")
        out = handle(agent, payload, env)
    except Exception as exc:  # a hook must never hurt the agent
        log(env, f"{args[:1]} {hook}: {type(exc).__name__}: {exc}")
        out = render_output(agent, hook) if agent is not None else "{}"
    try:
        sys.stdout.write(out + "\n")
        sys.stdout.flush()
    except OSError as exc:  # the agent closed our stdout (BrokenPipeError): not its problem
        log(env, f"{args[:1]} {hook}: output not delivered: {type(exc).__name__}: {exc}")
        try:  # noqa: SIM105 (contextlib costs the hook's start); stdout is flushed again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    if env.get("ENGRAM_HOOK_DEBUG"):
        log(env, f"{args[:1]} {hook}: {1000 * (time.perf_counter() - started):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
