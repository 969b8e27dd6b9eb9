"""``Client`` and ``AsyncClient``: the REST API over httpx, with the service's own models and
exceptions. Both are derived from the I/O-free call descriptions in ``_calls``: a resource
method here is one line naming the call, and the two clients differ only in how they send it.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
import time
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar

import httpx

from engram.capture.repo import RepoRulesError
from engram.capture.which import PROJECT_HEADER, which_environment
from engram.config import Settings
from engram.errors import InvalidInput, Unauthenticated
from engram.models import Layer
from engram.sdk._calls import AccountCalls, Call, EnvironmentCalls, LayerCalls, error_from
from engram.sdk._handoffs import HandoffCalls
from engram.sdk._learning import ExtractionCalls, LifecycleCalls
from engram.sdk._portability import ImportCalls
from engram.sdk._profile import ProfileCalls
from engram.sdk._retrieval import RetrievalCalls
from engram.sdk._retry import Retry, headers_for
from engram.sdk._soul import SoulCalls

DEFAULT_URL = "http://127.0.0.1:8765"
P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C")


def resolve(url: str | None, token: str | None, home: Path | str | None) -> tuple[str, str]:
    """URL: argument, ``ENGRAM_URL``, then the default. Token: argument, ``ENGRAM_TOKEN``, then
    ``<home>/token`` (the file ``engram init`` writes)."""
    url = url or os.environ.get("ENGRAM_URL") or DEFAULT_URL
    token = token or os.environ.get("ENGRAM_TOKEN")
    if not token:
        path = Settings.load(home).home / "token"
        try:
            token = path.read_text().strip()
        except OSError as exc:
            raise Unauthenticated(
                f"no API key: pass token=, set ENGRAM_TOKEN, or run 'engram init' ({path})"
            ) from exc
    return url.rstrip("/"), token


def project_headers(project: str | None) -> dict[str, str]:
    """``X-Engram-Project``: ``project``, else the one rule of :mod:`engram.capture.which`
    (``ENGRAM_ENV``, then the working directory's ``.engram.toml`` or git root); ``""`` sends
    none (calls naming no environment then use your default)."""
    if project is None:
        try:
            project = which_environment(None, os.environ, Path.cwd()).ref or ""
        except RepoRulesError as exc:
            raise InvalidInput(str(exc), field=".engram.toml") from exc
    return {PROJECT_HEADER: project} if project else {}


def _request(call: Call[Any]) -> dict[str, Any]:
    out = {"params": call.params or None, "headers": headers_for(call)}
    if call.content is not None:
        return {**out, "content": call.content}
    return {**out, "json": call.body}


def _read(call: Call[T], response: httpx.Response) -> T:
    data = response.json() if response.content else None
    if response.status_code >= 400:
        raise error_from(response.status_code, data)
    return call.parse(data)


class _Resource(Generic[C]):
    def __init__(self, send: Callable[[Call[Any]], Any], calls: C) -> None:
        self._send = send
        self._calls = calls


def _public(build: Callable[..., Any], name: str, *, awaited: bool) -> _Public:
    """What a resource method shows ``inspect.signature``, ``help()`` and IDEs: the call's
    parameters without its ``self``, the answer's type, its docstring (or one naming it)."""
    try:
        sig = inspect.signature(build, eval_str=True)
    except (NameError, TypeError):  # an annotation only a type checker can read
        sig = inspect.signature(build)
    params = list(sig.parameters.values())[1:]
    answer = sig.return_annotation
    args = typing.get_args(answer)
    if typing.get_origin(answer) is Call and args:
        answer = args[0]
    elif isinstance(answer, str) and answer.startswith("Call[") and answer.endswith("]"):
        answer = answer[5:-1]
    public = sig.replace(parameters=params, return_annotation=answer)
    shown = getattr(answer, "__name__", None) or str(answer)
    doc = inspect.getdoc(build) or f"Send the request; the answer as {shown}."
    if awaited:
        doc += "\n\nA coroutine: await it."
    return _Public(name, public, doc)


@dataclass(frozen=True)
class _Public:
    name: str
    signature: inspect.Signature
    doc: str

    def check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A wrong call is a TypeError naming this method, not the call description's."""
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}{self.signature}: {exc}") from None

    def dress(self, method: Callable[..., Any], owner: object) -> None:
        method.__name__ = self.name
        method.__qualname__ = f"{getattr(owner, '__name__', 'resource')}.{self.name}"
        method.__doc__ = self.doc
        method.__signature__ = self.signature  # type: ignore[attr-defined]


class _Sync(Generic[C, P, T]):
    """A resource method that sends its call and returns the answer."""

    def __init__(self, build: Callable[Concatenate[C, P], Call[T]]) -> None:
        self._build = build
        self._public = _public(build, build.__name__, awaited=False)

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._public.name:  # record_outcome sends LayerCalls.outcome
            self._public = _public(self._build, name, awaited=False)

    def __get__(self, obj: _Resource[C], owner: object) -> Callable[P, T]:
        public = self._public

        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            public.check(args, kwargs)
            result: T = obj._send(self._build(obj._calls, *args, **kwargs))
            return result

        public.dress(method, owner)
        return method


class _Async(Generic[C, P, T]):
    """The same method, awaited."""

    def __init__(self, build: Callable[Concatenate[C, P], Call[T]]) -> None:
        self._build = build
        self._public = _public(build, build.__name__, awaited=True)

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._public.name:
            self._public = _public(self._build, name, awaited=True)

    def __get__(self, obj: _Resource[C], owner: object) -> Callable[P, Awaitable[T]]:
        public = self._public

        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            public.check(args, kwargs)
            result: T = await obj._send(self._build(obj._calls, *args, **kwargs))
            return result

        public.dress(method, owner)
        return method


# -- resources (one line per method, per flavour) --------------------------------------------
class Memories(_Resource[LayerCalls]):
    add = _Sync(LayerCalls.add)
    add_many = _Sync(LayerCalls.add_many)
    get = _Sync(LayerCalls.get)
    list = _Sync(LayerCalls.list)
    update = _Sync(LayerCalls.update)
    update_many = _Sync(LayerCalls.update_many)
    delete = _Sync(LayerCalls.delete)
    delete_many = _Sync(LayerCalls.delete_many)
    history = _Sync(LayerCalls.history)
    restore = _Sync(LayerCalls.restore)
    purge = _Sync(LayerCalls.purge)
    record_outcome = _Sync(LayerCalls.outcome)


class AsyncMemories(_Resource[LayerCalls]):
    add = _Async(LayerCalls.add)
    add_many = _Async(LayerCalls.add_many)
    get = _Async(LayerCalls.get)
    list = _Async(LayerCalls.list)
    update = _Async(LayerCalls.update)
    update_many = _Async(LayerCalls.update_many)
    delete = _Async(LayerCalls.delete)
    delete_many = _Async(LayerCalls.delete_many)
    history = _Async(LayerCalls.history)
    restore = _Async(LayerCalls.restore)
    purge = _Async(LayerCalls.purge)
    record_outcome = _Async(LayerCalls.outcome)


class Environments(_Resource[EnvironmentCalls]):
    list = _Sync(EnvironmentCalls.list)
    create = _Sync(EnvironmentCalls.create)
    get = _Sync(EnvironmentCalls.get)
    delete = _Sync(EnvironmentCalls.delete)
    members = _Sync(EnvironmentCalls.members)
    share = _Sync(EnvironmentCalls.share)
    unshare = _Sync(EnvironmentCalls.unshare)


class AsyncEnvironments(_Resource[EnvironmentCalls]):
    list = _Async(EnvironmentCalls.list)
    create = _Async(EnvironmentCalls.create)
    get = _Async(EnvironmentCalls.get)
    delete = _Async(EnvironmentCalls.delete)
    members = _Async(EnvironmentCalls.members)
    share = _Async(EnvironmentCalls.share)
    unshare = _Async(EnvironmentCalls.unshare)


class Accounts(_Resource[AccountCalls]):
    me = _Sync(AccountCalls.me)
    users = _Sync(AccountCalls.users)
    user = _Sync(AccountCalls.user)
    key = _Sync(AccountCalls.key)
    create_user = _Sync(AccountCalls.create_user)
    delete_user = _Sync(AccountCalls.delete_user)
    set_password = _Sync(AccountCalls.set_password)
    keys = _Sync(AccountCalls.keys)
    create_key = _Sync(AccountCalls.create_key)
    rotate_key = _Sync(AccountCalls.rotate_key)
    revoke_key = _Sync(AccountCalls.revoke_key)
    grants = _Sync(AccountCalls.grants)
    grant = _Sync(AccountCalls.grant)
    revoke_grant = _Sync(AccountCalls.revoke_grant)
    audit = _Sync(AccountCalls.audit)
    providers = _Sync(AccountCalls.providers)
    set_provider = _Sync(AccountCalls.set_provider)
    remove_provider = _Sync(AccountCalls.remove_provider)


class AsyncAccounts(_Resource[AccountCalls]):
    me = _Async(AccountCalls.me)
    users = _Async(AccountCalls.users)
    user = _Async(AccountCalls.user)
    key = _Async(AccountCalls.key)
    create_user = _Async(AccountCalls.create_user)
    delete_user = _Async(AccountCalls.delete_user)
    set_password = _Async(AccountCalls.set_password)
    keys = _Async(AccountCalls.keys)
    create_key = _Async(AccountCalls.create_key)
    rotate_key = _Async(AccountCalls.rotate_key)
    revoke_key = _Async(AccountCalls.revoke_key)
    grants = _Async(AccountCalls.grants)
    grant = _Async(AccountCalls.grant)
    revoke_grant = _Async(AccountCalls.revoke_grant)
    audit = _Async(AccountCalls.audit)
    providers = _Async(AccountCalls.providers)
    set_provider = _Async(AccountCalls.set_provider)
    remove_provider = _Async(AccountCalls.remove_provider)


class Handoffs(_Resource[HandoffCalls]):
    begin = _Sync(HandoffCalls.begin)
    list = _Sync(HandoffCalls.list)
    get = _Sync(HandoffCalls.get)
    accept = _Sync(HandoffCalls.accept)
    cancel = _Sync(HandoffCalls.cancel)


class AsyncHandoffs(_Resource[HandoffCalls]):
    begin = _Async(HandoffCalls.begin)
    list = _Async(HandoffCalls.list)
    get = _Async(HandoffCalls.get)
    accept = _Async(HandoffCalls.accept)
    cancel = _Async(HandoffCalls.cancel)


class Profile(_Resource[ProfileCalls]):
    list = _Sync(ProfileCalls.list)
    add = _Sync(ProfileCalls.add)
    edit = _Sync(ProfileCalls.edit)
    delete = _Sync(ProfileCalls.delete)
    status = _Sync(ProfileCalls.status)
    set_learning = _Sync(ProfileCalls.set_learning)


class AsyncProfile(_Resource[ProfileCalls]):
    list = _Async(ProfileCalls.list)
    add = _Async(ProfileCalls.add)
    edit = _Async(ProfileCalls.edit)
    delete = _Async(ProfileCalls.delete)
    status = _Async(ProfileCalls.status)
    set_learning = _Async(ProfileCalls.set_learning)


class Soul(_Resource[SoulCalls]):
    view = _Sync(SoulCalls.view)
    get_block = _Sync(SoulCalls.get_block)
    render = _Sync(SoulCalls.render)
    layer = _Sync(SoulCalls.layer)
    set_block = _Sync(SoulCalls.set_block)
    history = _Sync(SoulCalls.history)
    diff = _Sync(SoulCalls.diff)
    restore_block = _Sync(SoulCalls.restore_block)
    snapshot = _Sync(SoulCalls.snapshot)
    snapshots = _Sync(SoulCalls.snapshots)
    get_snapshot = _Sync(SoulCalls.get_snapshot)
    diff_snapshot = _Sync(SoulCalls.diff_snapshot)
    restore_snapshot = _Sync(SoulCalls.restore_snapshot)
    presets = _Sync(SoulCalls.presets)
    apply_preset = _Sync(SoulCalls.apply_preset)


class AsyncSoul(_Resource[SoulCalls]):
    view = _Async(SoulCalls.view)
    get_block = _Async(SoulCalls.get_block)
    render = _Async(SoulCalls.render)
    layer = _Async(SoulCalls.layer)
    set_block = _Async(SoulCalls.set_block)
    history = _Async(SoulCalls.history)
    diff = _Async(SoulCalls.diff)
    restore_block = _Async(SoulCalls.restore_block)
    snapshot = _Async(SoulCalls.snapshot)
    snapshots = _Async(SoulCalls.snapshots)
    get_snapshot = _Async(SoulCalls.get_snapshot)
    diff_snapshot = _Async(SoulCalls.diff_snapshot)
    restore_snapshot = _Async(SoulCalls.restore_snapshot)
    presets = _Async(SoulCalls.presets)
    apply_preset = _Async(SoulCalls.apply_preset)


class Extraction(_Resource[ExtractionCalls]):
    extract = _Sync(ExtractionCalls.extract)
    add_messages = _Sync(ExtractionCalls.add_messages)
    get_conversation = _Sync(ExtractionCalls.get_conversation)
    delete_conversation = _Sync(ExtractionCalls.delete_conversation)
    messages = _Sync(ExtractionCalls.messages)


class AsyncExtraction(_Resource[ExtractionCalls]):
    extract = _Async(ExtractionCalls.extract)
    add_messages = _Async(ExtractionCalls.add_messages)
    get_conversation = _Async(ExtractionCalls.get_conversation)
    delete_conversation = _Async(ExtractionCalls.delete_conversation)
    messages = _Async(ExtractionCalls.messages)


class Lifecycle(_Resource[LifecycleCalls]):
    remember = _Sync(LifecycleCalls.remember)
    feedback = _Sync(LifecycleCalls.feedback)
    undo = _Sync(LifecycleCalls.undo)
    maintain = _Sync(LifecycleCalls.maintain)
    reviews = _Sync(LifecycleCalls.reviews)
    resolve_review = _Sync(LifecycleCalls.resolve_review)


class AsyncLifecycle(_Resource[LifecycleCalls]):
    remember = _Async(LifecycleCalls.remember)
    feedback = _Async(LifecycleCalls.feedback)
    undo = _Async(LifecycleCalls.undo)
    maintain = _Async(LifecycleCalls.maintain)
    reviews = _Async(LifecycleCalls.reviews)
    resolve_review = _Async(LifecycleCalls.resolve_review)


class Imports(_Resource[ImportCalls]):
    upload = _Sync(ImportCalls.upload)
    get = _Sync(ImportCalls.get)
    list = _Sync(ImportCalls.list)
    commit = _Sync(ImportCalls.commit)
    delete = _Sync(ImportCalls.delete)


class AsyncImports(_Resource[ImportCalls]):
    upload = _Async(ImportCalls.upload)
    get = _Async(ImportCalls.get)
    list = _Async(ImportCalls.list)
    commit = _Async(ImportCalls.commit)
    delete = _Async(ImportCalls.delete)


class _SyncRetrieval(_Resource[RetrievalCalls]):
    search = _Sync(RetrievalCalls.search)
    context = _Sync(RetrievalCalls.context)


class _AsyncRetrieval(_Resource[RetrievalCalls]):
    search = _Async(RetrievalCalls.search)
    context = _Async(RetrievalCalls.context)


# -- clients ---------------------------------------------------------------------------------
class Client:
    """``Client(url=None, token=None)``; use as a context manager or call :meth:`close`.

    ``client.facts``, ``client.episodes``, ``client.procedures`` (add, get, list, update,
    delete, history, restore, purge, bulk variants, record_outcome), ``client.environments``
    (+ members, share, unshare), ``client.accounts`` (me, users, keys, audit), ``client.soul``
    (view, blocks, versions, snapshots, presets, render), ``client.extraction`` (extract,
    add_messages, get_conversation, delete_conversation, messages), ``client.handoffs``
    (begin, list, get, accept, cancel), ``client.profile`` (list, add, edit, delete, status,
    set_learning), ``client.lifecycle`` (remember, feedback, undo, maintain,
    reviews, resolve_review) and ``client.imports``
    (upload, get, list, commit, delete: import jobs); ``client.search(query)`` and
    ``client.context(query)`` are the calls an app makes around each LLM call.

    Calls that name no environment use the project the client works in: ``project=``, else
    ``ENGRAM_ENV``, else the working directory's project (sent as ``X-Engram-Project``; the
    server creates its environment on first use); ``project=""`` means your default environment.

    Writes carry a fresh ``Idempotency-Key`` each, and failures that are safe to retry (the
    connection lost, 429, 503) are retried as ``retry`` says (:class:`Retry`: 5 tries with
    jittered exponential backoff; ``Retry(attempts=1)`` never retries).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        home: Path | str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        retry: Retry | None = None,
        project: str | None = None,
    ) -> None:
        self.url, token = resolve(url, token, home)
        self.retry = retry or Retry()
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", **project_headers(project)},
            timeout=timeout,
            transport=transport,
        )
        self.facts = Memories(self._send, LayerCalls(Layer.FACT))
        self.episodes = Memories(self._send, LayerCalls(Layer.EPISODE))
        self.procedures = Memories(self._send, LayerCalls(Layer.PROCEDURE))
        self.environments = Environments(self._send, EnvironmentCalls())
        self.accounts = Accounts(self._send, AccountCalls())
        self.soul = Soul(self._send, SoulCalls())
        self.handoffs = Handoffs(self._send, HandoffCalls())
        self.profile = Profile(self._send, ProfileCalls())
        self.extraction = Extraction(self._send, ExtractionCalls())
        self.lifecycle = Lifecycle(self._send, LifecycleCalls())
        self.imports = Imports(self._send, ImportCalls())
        retrieval = _SyncRetrieval(self._send, RetrievalCalls())
        self.search = retrieval.search
        self.context = retrieval.context

    def _send(self, call: Call[T]) -> T:
        request = _request(call)
        for attempt in itertools.count(1):
            try:
                outcome: httpx.Response | Exception = self._http.request(
                    call.method, call.path, **request
                )
            except httpx.TransportError as exc:
                outcome = exc
            step = self.retry.step(attempt, outcome)
            if isinstance(step, httpx.Response):
                return _read(call, step)
            time.sleep(step)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """The same API as :class:`Client`, every method awaitable."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        home: Path | str | None = None,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retry: Retry | None = None,
        project: str | None = None,
    ) -> None:
        self.url, token = resolve(url, token, home)
        self.retry = retry or Retry()
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", **project_headers(project)},
            timeout=timeout,
            transport=transport,
        )
        self.facts = AsyncMemories(self._send, LayerCalls(Layer.FACT))
        self.episodes = AsyncMemories(self._send, LayerCalls(Layer.EPISODE))
        self.procedures = AsyncMemories(self._send, LayerCalls(Layer.PROCEDURE))
        self.environments = AsyncEnvironments(self._send, EnvironmentCalls())
        self.accounts = AsyncAccounts(self._send, AccountCalls())
        self.soul = AsyncSoul(self._send, SoulCalls())
        self.handoffs = AsyncHandoffs(self._send, HandoffCalls())
        self.profile = AsyncProfile(self._send, ProfileCalls())
        self.extraction = AsyncExtraction(self._send, ExtractionCalls())
        self.lifecycle = AsyncLifecycle(self._send, LifecycleCalls())
        self.imports = AsyncImports(self._send, ImportCalls())
        retrieval = _AsyncRetrieval(self._send, RetrievalCalls())
        self.search = retrieval.search
        self.context = retrieval.context

    async def _send(self, call: Call[T]) -> T:
        request = _request(call)
        for attempt in itertools.count(1):
            try:
                outcome: httpx.Response | Exception = await self._http.request(
                    call.method, call.path, **request
                )
            except httpx.TransportError as exc:
                outcome = exc
            step = self.retry.step(attempt, outcome)
            if isinstance(step, httpx.Response):
                return _read(call, step)
            await asyncio.sleep(step)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
