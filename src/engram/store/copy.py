"""Copy everything from one store to another (SQLite <-> PostgreSQL) and prove it arrived.

Works through the :class:`Store` protocol and its sub-stores (``Store.export``
for key digests, raw vectors and the list of conversations), so it knows no SQL. Each memory is
written with all its versions in one transaction; a copy interrupted part-way can be resumed
with ``force``: what already arrived (by id) is skipped. Afterwards every collection is read
back from both stores and compared by count and SHA-256 over its canonical JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC

from pydantic import BaseModel

from engram.accounts import AuditEntry, AuditQuery
from engram.errors import Conflict
from engram.lifecycle.reviews import ReviewStatus
from engram.models import Memory, MemoryFilter, Status
from engram.soul.model import SoulBlockVersion
from engram.store.profile import ProfileEntry
from engram.store.protocol import Change, Store

_PAGE = 1000
_ALL = 1_000_000_000


@dataclass(frozen=True)
class TableCheck:
    name: str
    source_count: int
    dest_count: int
    source_sha256: str
    dest_sha256: str

    @property
    def ok(self) -> bool:
        return (self.source_count, self.source_sha256) == (self.dest_count, self.dest_sha256)


# -- reading: each collection as canonical JSON lines, the same on every backend --------------
def _memories(store: Store) -> Iterator[Memory]:
    flt = MemoryFilter(statuses=list(Status))
    for env in store.list_environments():
        env_flt = flt.model_copy(update={"environment_ids": [env.id]})
        offset = 0
        while page := store.list_memories(env_flt, limit=_PAGE, offset=offset, order="created_at"):
            yield from page
            offset += len(page)


def _audit(store: Store) -> list[AuditEntry]:
    out: list[AuditEntry] = []
    while page := store.audit.query(AuditQuery(limit=_PAGE, offset=len(out))):
        out.extend(page)
    return out[::-1]  # oldest first


def _owners(store: Store) -> list[str]:
    users = [u.id for u in store.accounts.list_users()]
    return list(dict.fromkeys(users + [e.owner for e in store.list_environments()]))


def _layers(store: Store) -> list[str | None]:
    return [None, *(e.id for e in store.list_environments())]


def _soul_versions(store: Store) -> Iterator[tuple[str, SoulBlockVersion]]:
    for owner in _owners(store):
        for block in store.soul.blocks(owner, _layers(store)):
            for v in store.soul.versions(owner, block.environment_id, block.name):
                yield owner, v


def _rows(store: Store) -> dict[str, Callable[[], Iterator[str]]]:
    exp = store.export
    conversations = store.conversations
    providers = store.providers

    def memories() -> Iterator[str]:
        for m in _memories(store):
            yield _canon(m)
            yield from (_canon(v) for v in store.versions(m.id))

    def vectors() -> Iterator[str]:
        for model in sorted(store.embedding_stats()):
            for u in exp.embeddings(model):
                yield f"{model}|{u.memory_id}|{u.content_hash}|{u.vector.tobytes().hex()}"

    def conversation_rows() -> Iterator[str]:
        for cid in exp.conversation_ids():
            conv = conversations.get_conversation(cid)
            assert conv is not None
            yield _canon(conv)
            yield _canon(conversations.extraction_state(cid))
            yield from (_canon(m) for m in conversations.messages(cid))

    def api_keys() -> Iterator[str]:
        digests = exp.key_digests()
        return (_canon(k) + digests[k.id] for k in store.accounts.list_keys())

    return {
        "environments": lambda: (_canon(e) for e in store.list_environments()),
        "memories": memories,
        "vectors": vectors,
        "users": lambda: (
            _canon(u) + str(store.accounts.password_hash(u.id)) for u in store.accounts.list_users()
        ),
        "api_keys": api_keys,
        "members": lambda: (
            _canon(m) for e in store.list_environments() for m in store.accounts.list_members(e.id)
        ),
        "audit": lambda: (_canon(e) for e in _audit(store)),
        "soul": lambda: (o + _canon(v) for o, v in _soul_versions(store)),
        "soul_snapshots": lambda: (
            _canon(s)
            for o in _owners(store)
            for layer in _layers(store)
            for s in store.soul.snapshots(o, layer)
        ),
        "conversations": conversation_rows,
        "providers": lambda: (repr(p) for p in providers.list_providers()),
        "reviews": lambda: (
            _canon(r) for r in store.reviews.list_reviews([], list(ReviewStatus), limit=_ALL)
        ),
        "profile": lambda: (
            f"{o} {store.profile.learning(o)} {[_habit(e) for e in store.profile.list_entries(o)]}"
            for o in _owners(store)
        ),
    }


def verify(source: Store, dest: Store) -> list[TableCheck]:
    """Count and checksum every collection on both sides."""
    src, dst = _rows(source), _rows(dest)
    checks = []
    for name, read in src.items():
        a, b = sorted(read()), sorted(dst[name]())
        checks.append(TableCheck(name, len(a), len(b), _sha(a), _sha(b)))
    return checks


def _habit(entry: ProfileEntry) -> str:
    at = [t.astimezone(UTC).isoformat() for t in (entry.created_at, entry.updated_at)]
    return json.dumps(
        [entry.id, entry.key, entry.text, list(entry.projects), entry.stated_global, at]
    )


def _canon(value: BaseModel) -> str:
    """JSON with sorted keys (PostgreSQL's jsonb does not keep a dict's key order)."""
    return json.dumps(value.model_dump(mode="json"), sort_keys=True)


def _sha(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()


def is_empty(store: Store) -> bool:
    return not store.list_environments() and not store.accounts.list_users()


# -- writing ----------------------------------------------------------------------------------
def copy_store(source: Store, dest: Store, *, force: bool = False) -> list[TableCheck]:
    """Copy every collection from ``source`` into ``dest`` and verify it. A non-empty
    ``dest`` is refused unless ``force`` (then what is already there, by id, is kept)."""
    if not force and not is_empty(dest):
        raise Conflict("the destination store is not empty (use --force to copy into it)")
    _copy_accounts(source, dest)
    for env in source.list_environments():
        if dest.get_environment(env.id) is None:
            dest.create_environment(env)
        for member in source.accounts.list_members(env.id):
            dest.accounts.put_member(member)
    _copy_memories(source, dest)
    _copy_soul(source, dest)
    _copy_conversations(source, dest)
    for item in source.reviews.list_reviews([], list(ReviewStatus), limit=_ALL):
        dest.reviews.put_review(item)
    for record in source.providers.list_providers():
        dest.providers.put_provider(record)
    for owner in _owners(source):
        if source.profile.learning(owner):
            dest.profile.set_learning(owner, True)
        for entry in source.profile.list_entries(owner):
            dest.profile.put_entry(entry)
    have = {e.id for e in _audit(dest)}
    todo = [e for e in _audit(source) if e.id not in have]
    for start in range(0, len(todo), _PAGE):
        dest.audit.append(todo[start : start + _PAGE])
    return verify(source, dest)


def _copy_accounts(source: Store, dest: Store) -> None:
    for user in source.accounts.list_users():
        if dest.accounts.get_user(user.id) is None:
            dest.accounts.create_user(user, source.accounts.password_hash(user.id))
    digests = source.export.key_digests()
    keys = source.accounts.list_keys()  # oldest first: a rotated key before its replacement
    replaced = {k.replaced_by: k.id for k in keys if k.replaced_by}
    for key in keys:
        if dest.accounts.get_key(key.id) is None:
            # a replacement revokes the key it replaces, as the rotation did
            dest.accounts.create_key(key, digests[key.id], replaces=replaced.get(key.id))
            if key.revoked_at is not None and key.replaced_by is None:
                dest.accounts.revoke_key(key.id, key.revoked_at)
            if key.last_used_at is not None:
                dest.accounts.touch_key(key.id, key.last_used_at)


def _copy_memories(source: Store, dest: Store) -> None:
    page: list[Memory] = []

    def flush() -> None:
        have = {m.id for m in dest.get([m.id for m in page])}
        # one transaction per memory: its final state and every version, verbatim
        for m in page:
            if m.id not in have:
                dest.write([Change(m, v) for v in source.versions(m.id)])
        page.clear()

    for memory in _memories(source):
        page.append(memory)
        if len(page) == _PAGE:
            flush()
    flush()
    exp = source.export
    for model in source.embedding_stats():
        batch = []
        for update in exp.embeddings(model):
            batch.append(update)
            if len(batch) == _PAGE:
                dest.put_embeddings(model, batch)
                batch = []
        dest.put_embeddings(model, batch)


def _copy_soul(source: Store, dest: Store) -> None:
    for owner in _owners(source):
        layers = _layers(source)
        for layer in layers:
            have = {s.id for s in dest.soul.snapshots(owner, layer)}
            for snap in source.soul.snapshots(owner, layer):
                if snap.id not in have:
                    dest.soul.write(owner, [], snap)
        stored = {(b.environment_id, b.name): b.version for b in dest.soul.blocks(owner, layers)}
        for block in source.soul.blocks(owner, layers):
            done = stored.get((block.environment_id, block.name), 0)
            versions = source.soul.versions(owner, block.environment_id, block.name)
            if versions[done:]:
                dest.soul.write(owner, versions[done:])


def _copy_conversations(source: Store, dest: Store) -> None:
    src, dst = source.conversations, dest.conversations
    for cid in source.export.conversation_ids():
        conv = src.get_conversation(cid)
        assert conv is not None
        dst.create_conversation(conv)
        messages = src.messages(cid)
        if dst.count_messages(cid) < len(messages):
            from engram.extraction.conversation import NewMessage

            fresh = messages[dst.count_messages(cid) :]
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
            dst.append_messages(cid, news, [m.id for m in fresh])
        state = src.extraction_state(cid)
        dst.advance_extraction(cid, dst.extraction_state(cid), state)
