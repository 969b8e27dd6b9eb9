"""The Engram archive (format in :mod:`engram.portability.archive`): write everything a home
holds — or everything of one account — and restore it into an empty home, verbatim (ids,
times and versions kept), so that exporting again gives byte-identical collections.

Reads and writes go through the :class:`Store` protocol and its sub-stores only. Restoring is
a copy of stored history, not new activity: it goes around the lifecycle and is not itself
audited (the archive's audit log is restored as it was).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from engram.accounts import AuditEntry, AuditQuery, Member, User
from engram.actors import Actor
from engram.clock import Clock
from engram.errors import Conflict, InvalidInput, NotFound, PermissionDenied
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
        The result is checked: every collection must export to the archive's bytes."""
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
            if isinstance(r, dict)  # a malformed record is the writers' to report
            and by_name.get((r.get("owner"), r.get("name")), r.get("id")) != r.get("id")
        )
        if clashes:
            raise Conflict(
                f"environment {', '.join(clashes)} exists here with another id: nothing restored; "
                "restore the archive into a home that was never initialised",
                environments=clashes,
            )
        vectors = bool(records.get("vectors"))
        writers: list[tuple[str, Callable[[list[Any]], None]]] = [
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
        for name, put in writers:
            try:
                put(records.get(name, []))
            except (TypeError, ValueError, KeyError) as exc:
                raise InvalidInput(
                    f"archive collection {name!r}: a malformed record ({exc})"
                ) from exc
        scope = str(manifest.get("scope", "all"))
        account = scope.split(":", 1)[1] if scope.startswith("account:") else None
        again = {c.name: c for c in self.collections(account=account, vectors=vectors)}
        checks = {
            name: again[name].sha256 == info["sha256"]
            for name, info in manifest["collections"].items()
        }
        return RestoreReport({k: len(v) for k, v in records.items()}, checks)

    def _put_users(self, rows: list[Any]) -> None:
        for r in rows:
            user = User(**r)
            if self._store.accounts.get_user(user.id) is None:
                self._store.accounts.create_user(user, None)

    def _put_envs(self, rows: list[Any]) -> None:
        for r in rows:
            env = Environment(**r)
            if self._store.get_environment(env.id) is None:
                self._store.create_environment(env)

    def _put_members(self, rows: list[Any]) -> None:
        for r in rows:
            self._store.accounts.put_member(Member(**r))

    def _put_reviews(self, rows: list[Any]) -> None:
        for r in rows:
            self._store.reviews.put_review(ReviewItem(**r))

    def _put_memories(self, rows: list[Any]) -> None:
        have = set()
        for start in range(0, len(rows), _PAGE):
            ids = [r["memory"]["id"] for r in rows[start : start + _PAGE]]
            have |= {m.id for m in self._store.get(ids)}
        for r in rows:
            memory = Memory(**r["memory"])
            if memory.id not in have:
                versions = [MemoryVersion(**v) for v in r["versions"]]
                self._store.write([Change(memory, v) for v in versions])

    def _put_vectors(self, rows: list[Any]) -> None:
        by_model: dict[str, list[EmbeddingUpdate]] = {}
        for r in rows:
            vector = np.frombuffer(base64.b64decode(r["vector"]), dtype="<f4").astype(np.float32)
            by_model.setdefault(r["model"], []).append(
                EmbeddingUpdate(r["memory_id"], r["content_hash"], vector)
            )
        for model, updates in sorted(by_model.items()):
            for start in range(0, len(updates), _PAGE):
                self._store.put_embeddings(model, updates[start : start + _PAGE])

    def _put_snapshots(self, rows: list[Any]) -> None:
        for r in rows:
            snap = SoulSnapshot(**r["snapshot"])
            existing = {s.id for s in self._store.soul.snapshots(r["owner"], snap.environment_id)}
            if snap.id not in existing:
                self._store.soul.write(r["owner"], [], snap)

    def _put_soul(self, rows: list[Any]) -> None:
        versions = [(r["owner"], SoulBlockVersion(**r["version"])) for r in rows]
        versions.sort(
            key=lambda x: (x[0], x[1].state.environment_id or "", x[1].state.name, x[1].version)
        )
        for owner, v in versions:
            stored = self._store.soul.versions(owner, v.state.environment_id, v.state.name)
            if len(stored) < v.version:
                self._store.soul.write(owner, [v])

    def _put_conversations(self, rows: list[Any]) -> None:
        for r in rows:
            conv = Conversation(**r["conversation"])
            self._conversations.create_conversation(conv)
            messages = [Message(**m) for m in r["messages"]]
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
            state = ExtractionState(**r["state"])
            self._conversations.advance_extraction(
                conv.id, self._conversations.extraction_state(conv.id), state
            )

    def _put_audit(self, rows: list[Any]) -> None:
        have = {a.id for a in _audit(self._store)}
        entries = sorted(
            (AuditEntry(**r) for r in rows if r["id"] not in have), key=lambda a: (a.at, a.id)
        )
        for start in range(0, len(entries), _PAGE):
            self._store.audit.append(entries[start : start + _PAGE])

    def _put_imports(self, rows: list[Any]) -> None:
        by_env: dict[str, list[tuple[str, str]]] = {}
        for r in rows:
            by_env.setdefault(r["environment_id"], []).append((r["key"], r["target"]))
        for env_id, pairs in by_env.items():
            self._store.imports.record(env_id, pairs)

    def _put_handoffs(self, rows: list[Any]) -> None:
        for r in rows:
            handoff = Handoff(**r)
            if self._store.handoffs.get(handoff.id) is None:
                self._store.handoffs.add(handoff)

    def _put_profile(self, rows: list[Any]) -> None:
        profile = self._store.profile
        for r in rows:
            if r["kind"] == "learning":
                profile.set_learning(str(r["user_id"]), bool(r["enabled"]))
            elif r["kind"] == "entry":
                e = r["entry"]
                if profile.get_entry(e["id"]) is None:
                    profile.put_entry(
                        ProfileEntry(
                            id=e["id"],
                            user_id=e["user_id"],
                            key=e["key"],
                            text=e["text"],
                            projects=tuple(e["projects"]),
                            stated_global=bool(e["stated_global"]),
                            created_at=datetime.fromisoformat(e["created_at"]),
                            updated_at=datetime.fromisoformat(e["updated_at"]),
                        )
                    )
            else:
                raise ValueError(f"unknown profile record kind {r['kind']!r}")

    def _put_settings(self, rows: list[Any]) -> None:
        for r in rows:
            if r["kind"] != "llm_provider":
                raise ValueError(f"unknown setting kind {r['kind']!r}")
            if self._store.providers.get_provider(r["name"]) is not None:
                continue
            v = r["value"]
            self._store.providers.put_provider(
                ProviderRecord(
                    name=r["name"],
                    kind=v["kind"],
                    base_url=v["base_url"],
                    model=v["model"],
                    encrypted_key=None,
                    timeout=float(v["timeout"]),
                    created_at=datetime.fromisoformat(v["created_at"]),
                )
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
