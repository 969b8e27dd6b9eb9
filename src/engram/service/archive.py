"""The Engram archive (format in :mod:`engram.portability.archive`): write everything a home
holds — or everything of one account — and restore it into an empty home, verbatim (ids,
times and versions kept), so that exporting again gives byte-identical collections.

Reads and writes go through the :class:`Store` protocol and its sub-stores only. Restoring is
a copy of stored history, not new activity: it goes around the lifecycle and is not itself
audited (the archive's audit log is restored as it was). It is all or nothing: every record is
read into its model first, then written and checked in one store transaction
(:meth:`Store.atomic`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from pydantic import ValidationError

from engram.accounts import AuditEntry, AuditQuery, Member, User
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied, StorageError
from engram.extraction.conversation import Conversation, ExtractionState, Message, NewMessage
from engram.handoffs import Handoff
from engram.lifecycle.reviews import ReviewItem, ReviewStatus
from engram.models import Environment, Memory, MemoryFilter, MemoryVersion, Status
from engram.portability import archive
from engram.portability.reading import Entry
from engram.soul.model import SoulBlockVersion, SoulSnapshot
from engram.store import Change, Store
from engram.store.conversations import ConversationStore
from engram.store.profile import ProfileEntry
from engram.store.protocol import EmbeddingUpdate
from engram.store.providers import ProviderRecord

_PAGE = 1000
_ALL = 1_000_000_000
_T = TypeVar("_T")


@dataclass(frozen=True)
class RestoreReport:
    counts: dict[str, int]
    checks: dict[str, bool]
    """Per collection: does the restored store export the same bytes as the archive held?"""


class ArchiveService:
    def __init__(self, store: Store, clock: Clock, conversations: ConversationStore) -> None:
        self._store = store
        self._clock = clock
        self._conversations = conversations

    # -- export --------------------------------------------------------------------------------
    def collections(
        self, *, account: str | None = None, vectors: bool = False
    ) -> list[archive.Collection]:
        """Every collection of the home (or of one account: the environments they own or are a
        member of, their Soul, the handoffs they may read and their own audit entries)."""
        s = self._store
        envs = s.list_environments()
        if account is not None:
            if s.accounts.get_user(account) is None and not any(e.owner == account for e in envs):
                raise NotFound(f"user {account!r} does not exist", user=account)
            shared = {m.environment_id for m in s.accounts.memberships(account)}
            envs = [e for e in envs if e.owner == account or e.id in shared]
        env_ids = {e.id for e in envs}
        users = [u for u in s.accounts.list_users() if account in (None, u.id)]
        owners = [account] if account else _owners(s)
        layers: list[str | None] = [None, *sorted(env_ids)]
        out = [
            archive.collection("users", (_json(u) for u in users)),
            archive.collection("environments", (_json(e) for e in envs)),
            archive.collection(
                "members", (_json(m) for e in envs for m in s.accounts.list_members(e.id))
            ),
            archive.collection("memories", self._memories(envs)),
            archive.collection("vectors", self._vectors(env_ids) if vectors else ()),
            archive.collection(
                "soul",
                (
                    {"owner": o, "version": _json(v)}
                    for o in owners
                    for b in s.soul.blocks(o, layers)
                    for v in s.soul.versions(o, b.environment_id, b.name)
                ),
            ),
            archive.collection(
                "soul_snapshots",
                (
                    {"owner": o, "snapshot": _json(x)}
                    for o in owners
                    for layer in layers
                    for x in s.soul.snapshots(o, layer)
                ),
            ),
            archive.collection("conversations", self._conversation_rows(env_ids)),
            archive.collection(
                "reviews",
                (
                    _json(r)
                    for r in s.reviews.list_reviews(sorted(env_ids), list(ReviewStatus), limit=_ALL)
                )
                if env_ids
                else (),
            ),
            archive.collection(
                "audit",
                (
                    _json(a)
                    # an account's: what it did (as its own audit log shows it), never what
                    # others did in an environment shared with it
                    for a in _audit(s)
                    if account is None or a.user_id == account
                ),
            ),
            archive.collection(
                "imports",
                (
                    {"environment_id": e, "key": k, "target": t}
                    for e in sorted(env_ids)
                    for k, t in s.imports.entries(e)
                ),
            ),
            archive.collection("settings", self._settings() if account is None else ()),
            archive.collection(
                "handoffs",
                (
                    _json(h)
                    # an account's: those it may read (its own and those left for it)
                    for h in s.handoffs.find(
                        visible_to=account, environment_ids=sorted(env_ids), limit=_ALL
                    )
                )
                if env_ids
                else (),
            ),
            archive.collection("profile", self._profile(owners)),
        ]
        return out

    def _settings(self) -> Iterator[dict[str, Any]]:
        """The home's settings kept in the store: the configured LLM providers (their API key
        stays with the home: it is encrypted with a key file outside the database)."""
        for p in self._store.providers.list_providers():
            yield {
                "kind": "llm_provider",
                "name": p.name,
                "value": {
                    "kind": p.kind,
                    "base_url": p.base_url,
                    "model": p.model,
                    "timeout": p.timeout,
                    "created_at": p.created_at.isoformat(),
                },
            }

    def _profile(self, user_ids: list[str]) -> Iterator[dict[str, Any]]:
        """Each user's cross-project habits and whether Engram learns them."""
        profile = self._store.profile
        for user_id in user_ids:
            yield {"kind": "learning", "user_id": user_id, "enabled": profile.learning(user_id)}
            for e in profile.list_entries(user_id):
                yield {"kind": "entry", "entry": _entry_json(e)}

    def export(self, actor: Actor, *, account: str | None = None, vectors: bool = False) -> bytes:
        """The archive as zip bytes. The whole home is the local owner's; an account's own
        archive is theirs (or the local owner's, on their behalf). ``account`` is a user's id
        or, failing that, their name."""
        if account is not None:
            user = self._store.accounts.get_user(account) or self._store.accounts.find_user(account)
            account = user.id if user is not None else account
        if account is None and actor.interface != "local":
            raise PermissionDenied("only the local owner can export the whole home")
        if account is not None and actor.interface != "local" and actor.user_id != account:
            raise PermissionDenied("you can export only your own account")
        return archive.write(
            self.collections(account=account, vectors=vectors),
            self._clock(),
            scope="all" if account is None else f"account:{account}",
        )

    def _memories(self, envs: list[Environment]) -> Iterator[dict[str, Any]]:
        for env in envs:
            flt = MemoryFilter(environment_ids=[env.id], statuses=list(Status))
            offset = 0
            while page := self._store.list_memories(
                flt, limit=_PAGE, offset=offset, order="created_at"
            ):
                for m in page:
                    versions = self._store.versions(m.id)
                    yield {"memory": _json(m), "versions": [_json(v) for v in versions]}
                offset += len(page)

    def _vectors(self, env_ids: set[str]) -> Iterator[dict[str, Any]]:
        exp = self._store.export
        live = {m.id for m in self._store.list_memories(
            MemoryFilter(environment_ids=sorted(env_ids), statuses=list(Status)), limit=_ALL
        )} if env_ids else set()  # fmt: skip
        for model in sorted(self._store.embedding_stats()):
            for u in exp.embeddings(model):
                if u.memory_id in live:
                    yield {
                        "model": model,
                        "memory_id": u.memory_id,
                        "content_hash": u.content_hash,
                        "vector": base64.b64encode(u.vector.astype("<f4").tobytes()).decode(),
                    }

    def _conversation_rows(self, env_ids: set[str]) -> Iterator[dict[str, Any]]:
        for cid in self._store.export.conversation_ids():
            conv = self._conversations.get_conversation(cid)
            if conv is None or conv.environment_id not in env_ids:
                continue
            yield {
                "conversation": _json(conv),
                "state": _json(self._conversations.extraction_state(cid)),
                "messages": [_json(m) for m in self._conversations.messages(cid)],
            }

    # -- restore -------------------------------------------------------------------------------
    def restore(self, entries: list[Entry], actor: Actor, *, force: bool = False) -> RestoreReport:
        """Write an archive's records into this store as they were. An archive is restored into
        an empty home (with ``force``, into a non-empty one: records whose id exists are kept).

        All or nothing: every record is read into its model before anything is written (a
        malformed one is an :class:`InvalidInput` naming its collection and record), then
        everything is written in one store transaction and checked there: every collection
        must export to the archive's bytes (with ``force`` a collection may also hold what the
        home had; it is reported, not refused). A write that fails or a check that does not
        hold leaves the home as it was."""
        if actor.interface != "local":
            raise PermissionDenied("only the local owner can restore an archive")
        manifest, records = archive.read(entries)
        held = self._store.list_environments()
        if not force and (held or self._store.accounts.list_users()):
            memories = self._store.count(MemoryFilter(statuses=list(Status)))
            raise Conflict(
                f"this home is not empty ({len(held)} environment{'' if len(held) == 1 else 's'}, "
                f"{memories} memories); "
                "restore an archive into a home that was never initialised",
                environments=len(held),
                memories=memories,
            )
        # --force keeps what exists: an archive environment may not take the name its owner
        # already gives another one here (checked before anything is written)
        by_name: dict[tuple[object, object], str] = {(e.owner, e.name): e.id for e in held}
        clashes = sorted(
            f"{r['name']!r} of {r['owner']}"
            for r in records.get("environments", [])
            if isinstance(r, dict)  # a malformed record is the reading's to report
            and by_name.get((r.get("owner"), r.get("name")), r.get("id")) != r.get("id")
        )
        if clashes:
            raise Conflict(
                f"environment {', '.join(clashes)} exists here with another id: nothing restored; "
                "restore the archive into a home that was never initialised",
                environments=clashes,
            )
        plan = _Plan.read(records)
        scope = str(manifest.get("scope", "all"))
        account = scope.split(":", 1)[1] if scope.startswith("account:") else None
        writers: list[tuple[str, Callable[[_Plan], None]]] = [
            ("users", self._put_users),
            ("environments", self._put_envs),
            ("members", self._put_members),
            ("memories", self._put_memories),
            ("vectors", self._put_vectors),
            ("soul_snapshots", self._put_snapshots),
            ("soul", self._put_soul),
            ("conversations", self._put_conversations),
            ("reviews", self._put_reviews),
            ("audit", self._put_audit),
            ("imports", self._put_imports),
            ("settings", self._put_settings),
            ("handoffs", self._put_handoffs),
            ("profile", self._put_profile),
        ]
        with self._store.atomic():
            for name, put in writers:
                try:
                    put(plan)
                except Conflict as exc:
                    raise Conflict(
                        f"archive collection {name!r}: {exc.message}; nothing restored",
                        collection=name,
                    ) from exc
            again = {c.name: c for c in self.collections(account=account, vectors=plan.vectors)}
            checks = {
                name: again[name].sha256 == info["sha256"]
                for name, info in manifest["collections"].items()
            }
            bad = [name for name, ok in checks.items() if not ok]
            if bad and not force:  # rolls the whole restore back
                raise StorageError(
                    f"the restored home would differ from the archive in: {', '.join(bad)}; "
                    "nothing restored",
                    collections=bad,
                )
        return RestoreReport({k: len(v) for k, v in records.items()}, checks)

    def _put_users(self, plan: _Plan) -> None:
        for user in plan.users:
            if self._store.accounts.get_user(user.id) is None:
                self._store.accounts.create_user(user, None)

    def _put_envs(self, plan: _Plan) -> None:
        for env in plan.environments:
            if self._store.get_environment(env.id) is None:
                self._store.create_environment(env)

    def _put_members(self, plan: _Plan) -> None:
        for member in plan.members:
            self._store.accounts.put_member(member)

    def _put_reviews(self, plan: _Plan) -> None:
        for item in plan.reviews:
            self._store.reviews.put_review(item)

    def _put_memories(self, plan: _Plan) -> None:
        have = set()
        for start in range(0, len(plan.memories), _PAGE):
            ids = [m.id for m, _ in plan.memories[start : start + _PAGE]]
            have |= {m.id for m in self._store.get(ids)}
        for memory, versions in plan.memories:
            if memory.id not in have:
                self._store.write([Change(memory, v) for v in versions])

    def _put_vectors(self, plan: _Plan) -> None:
        for model, updates in sorted(plan.embeddings.items()):
            for start in range(0, len(updates), _PAGE):
                self._store.put_embeddings(model, updates[start : start + _PAGE])

    def _put_snapshots(self, plan: _Plan) -> None:
        for owner, snap in plan.snapshots:
            existing = {s.id for s in self._store.soul.snapshots(owner, snap.environment_id)}
            if snap.id not in existing:
                self._store.soul.write(owner, [], snap)

    def _put_soul(self, plan: _Plan) -> None:
        versions = sorted(
            plan.soul,
            key=lambda x: (x[0], x[1].state.environment_id or "", x[1].state.name, x[1].version),
        )
        for owner, v in versions:
            stored = self._store.soul.versions(owner, v.state.environment_id, v.state.name)
            if len(stored) < v.version:
                self._store.soul.write(owner, [v])

    def _put_conversations(self, plan: _Plan) -> None:
        for conv, state, messages in plan.conversations:
            self._conversations.create_conversation(conv)
            stored = self._conversations.count_messages(conv.id)
            fresh = messages[stored:]
            news = [
                NewMessage(
                    role=m.role,
                    content=m.content,
                    author=m.author,
                    created_at=m.created_at,
                    external_id=m.external_id,
                )
                for m in fresh
            ]
            if news:
                self._conversations.append_messages(conv.id, news, [m.id for m in fresh])
            self._conversations.advance_extraction(
                conv.id, self._conversations.extraction_state(conv.id), state
            )

    def _put_audit(self, plan: _Plan) -> None:
        have = {a.id for a in _audit(self._store)}
        entries = sorted((a for a in plan.audit if a.id not in have), key=lambda a: (a.at, a.id))
        for start in range(0, len(entries), _PAGE):
            self._store.audit.append(entries[start : start + _PAGE])

    def _put_imports(self, plan: _Plan) -> None:
        by_env: dict[str, list[tuple[str, str]]] = {}
        for env_id, key, target in plan.imports:
            by_env.setdefault(env_id, []).append((key, target))
        for env_id, pairs in by_env.items():
            self._store.imports.record(env_id, pairs)

    def _put_handoffs(self, plan: _Plan) -> None:
        for handoff in plan.handoffs:
            if self._store.handoffs.get(handoff.id) is None:
                self._store.handoffs.add(handoff)

    def _put_profile(self, plan: _Plan) -> None:
        profile = self._store.profile
        for user_id, enabled in plan.learning:
            profile.set_learning(user_id, enabled)
        for entry in plan.profile:
            if profile.get_entry(entry.id) is None:
                profile.put_entry(entry)

    def _put_settings(self, plan: _Plan) -> None:
        for record in plan.providers:
            if self._store.providers.get_provider(record.name) is None:
                self._store.providers.put_provider(record)


_MALFORMED = (TypeError, ValueError, KeyError, AttributeError)
"""What reading a record that is not what its collection holds raises (pydantic's
``ValidationError`` is a ``ValueError``)."""


def _records(name: str, rows: list[Any], read: Callable[[dict[str, Any]], _T]) -> list[_T]:
    """Each of a collection's records read into its model; a malformed one is refused naming
    the collection, the record (its line in ``<name>.jsonl``) and its id where it has one."""
    out: list[_T] = []
    for n, row in enumerate(rows, 1):
        try:
            if not isinstance(row, dict):
                raise TypeError(f"not a JSON object: {archive.canonical(row)[:80]}")
            out.append(read(row))
        except _MALFORMED as exc:
            raise InvalidInput(
                f"archive collection {name!r}, record {n}{_which(row)}: a malformed record "
                f"({_why(exc)}); nothing restored",
                collection=name,
                record=n,
            ) from exc
    return out


def _which(row: Any) -> str:
    """`` (id '…')`` for a record (or the record it wraps) that names its id."""
    if not isinstance(row, dict):
        return ""
    for inner in (row, *(v for v in row.values() if isinstance(v, dict))):
        for key in ("id", "memory_id", "name"):
            if isinstance(inner.get(key), str):
                return f" ({key} {inner[key]!r})"
    return ""


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()
        )
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r}"
    return str(exc)


def _vector(r: dict[str, Any]) -> tuple[str, EmbeddingUpdate]:
    vector = np.frombuffer(base64.b64decode(r["vector"]), dtype="<f4").astype(np.float32)
    return str(r["model"]), EmbeddingUpdate(str(r["memory_id"]), str(r["content_hash"]), vector)


def _conversation(r: dict[str, Any]) -> tuple[Conversation, ExtractionState, list[Message]]:
    return (
        Conversation(**r["conversation"]),
        ExtractionState(**r["state"]),
        [Message(**m) for m in r["messages"]],
    )


def _setting(r: dict[str, Any]) -> ProviderRecord:
    if r["kind"] != "llm_provider":
        raise ValueError(f"unknown setting kind {r['kind']!r}")
    v = r["value"]
    return ProviderRecord(
        name=str(r["name"]),
        kind=str(v["kind"]),
        base_url=str(v["base_url"]),
        model=str(v["model"]),
        encrypted_key=None,
        timeout=float(v["timeout"]),
        created_at=datetime.fromisoformat(v["created_at"]),
    )


def _habit(r: dict[str, Any]) -> tuple[str, bool] | ProfileEntry:
    if r["kind"] == "learning":
        return str(r["user_id"]), bool(r["enabled"])
    if r["kind"] != "entry":
        raise ValueError(f"unknown profile record kind {r['kind']!r}")
    e = r["entry"]
    return ProfileEntry(
        id=str(e["id"]),
        user_id=str(e["user_id"]),
        key=str(e["key"]),
        text=str(e["text"]),
        projects=tuple(e["projects"]),
        stated_global=bool(e["stated_global"]),
        created_at=datetime.fromisoformat(e["created_at"]),
        updated_at=datetime.fromisoformat(e["updated_at"]),
    )


@dataclass(frozen=True)
class _Plan:
    """An archive's records as the models the store takes, read before anything is written."""

    users: list[User]
    environments: list[Environment]
    members: list[Member]
    memories: list[tuple[Memory, list[MemoryVersion]]]
    embeddings: dict[str, list[EmbeddingUpdate]]
    snapshots: list[tuple[str, SoulSnapshot]]
    soul: list[tuple[str, SoulBlockVersion]]
    conversations: list[tuple[Conversation, ExtractionState, list[Message]]]
    reviews: list[ReviewItem]
    audit: list[AuditEntry]
    imports: list[tuple[str, str, str]]
    providers: list[ProviderRecord]
    handoffs: list[Handoff]
    learning: list[tuple[str, bool]]
    profile: list[ProfileEntry]

    @property
    def vectors(self) -> bool:
        return bool(self.embeddings)

    @classmethod
    def read(cls, records: dict[str, list[Any]]) -> _Plan:
        def rows(name: str, read: Callable[[dict[str, Any]], _T]) -> list[_T]:
            return _records(name, records.get(name, []), read)

        embeddings: dict[str, list[EmbeddingUpdate]] = {}
        for model, update in rows("vectors", _vector):
            embeddings.setdefault(model, []).append(update)
        habits = rows("profile", _habit)
        return cls(
            users=rows("users", lambda r: User(**r)),
            environments=rows("environments", lambda r: Environment(**r)),
            members=rows("members", lambda r: Member(**r)),
            memories=rows(
                "memories",
                lambda r: (Memory(**r["memory"]), [MemoryVersion(**v) for v in r["versions"]]),
            ),
            embeddings=embeddings,
            snapshots=rows(
                "soul_snapshots", lambda r: (str(r["owner"]), SoulSnapshot(**r["snapshot"]))
            ),
            soul=rows("soul", lambda r: (str(r["owner"]), SoulBlockVersion(**r["version"]))),
            conversations=rows("conversations", _conversation),
            reviews=rows("reviews", lambda r: ReviewItem(**r)),
            audit=rows("audit", lambda r: AuditEntry(**r)),
            imports=rows(
                "imports", lambda r: (str(r["environment_id"]), str(r["key"]), str(r["target"]))
            ),
            providers=rows("settings", _setting),
            handoffs=rows("handoffs", lambda r: Handoff(**r)),
            learning=[h for h in habits if isinstance(h, tuple)],
            profile=[h for h in habits if isinstance(h, ProfileEntry)],
        )


def _entry_json(e: ProfileEntry) -> dict[str, Any]:
    return {
        "id": e.id,
        "user_id": e.user_id,
        "key": e.key,
        "text": e.text,
        "projects": list(e.projects),
        "stated_global": e.stated_global,
        "created_at": e.created_at.isoformat(),
        "updated_at": e.updated_at.isoformat(),
    }


def _json(value: Any) -> Any:
    return value.model_dump(mode="json")


def _owners(store: Store) -> list[str]:
    users = [u.id for u in store.accounts.list_users()]
    return sorted(set(users + [e.owner for e in store.list_environments()]))


def _audit(store: Store) -> list[AuditEntry]:
    out: list[AuditEntry] = []
    while page := store.audit.query(AuditQuery(limit=_PAGE, offset=len(out))):
        out.extend(page)
    return out
