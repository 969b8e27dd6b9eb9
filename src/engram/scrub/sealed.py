"""The trusted path from the memory services to the :class:`~engram.scrub.store.ScrubbingStore`:
a new memory's first change built from input this module scrubbed, which the store then writes
without walking it again (a write scrubbed its input, then the store scrubbed the memory built
from it: the same texts twice).

Only this module makes the two marker types, each through a key no other module holds:
:class:`Scrubbed` (an input and what its scrub removed) and :class:`SealedChange` (a
:class:`~engram.store.Change` whose memory was built here from a :class:`Scrubbed` input).
The store skips its walk only for a ``SealedChange`` sealed by its own scrubber, whose version
records that very memory with no reason; anything else — a plain ``Change``, a sealed one
copied with another memory (``dataclasses.replace`` cannot build one without the key), one
sealed by another scrubber — is scrubbed at the store as before.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from datetime import datetime

from engram.actors import Actor
from engram.lifecycle.changes import build, record
from engram.models import Action, NewMemory
from engram.scrub.scrubber import Redactions, Scrubber
from engram.scrub.values import scrub_value
from engram.store import Change

_KEY = object()
"""Held by this module alone: the markers' constructors refuse any other value."""


@dataclass(frozen=True, slots=True)
class Scrubbed:
    """A new memory's input after ``scrubber`` scrubbed it, and what was removed."""

    value: NewMemory
    found: Redactions
    scrubber: Scrubber
    key: InitVar[object]

    def __post_init__(self, key: object) -> None:
        if key is not _KEY:
            raise TypeError("only engram.scrub.sealed.scrub_new makes a Scrubbed input")


@dataclass(frozen=True, slots=True)
class SealedChange(Change):
    """A new memory's first change, built from a :class:`Scrubbed` input."""

    scrubber: Scrubber = field(kw_only=True)
    key: InitVar[object] = field(kw_only=True)

    def __post_init__(self, key: object) -> None:
        if key is not _KEY:
            raise TypeError("only engram.scrub.sealed.create makes a SealedChange")


def scrub_new(scrubber: Scrubber, new: NewMemory) -> Scrubbed:
    """``new`` with every free-text field scrubbed (:func:`scrub_value`)."""
    value, found = scrub_value(scrubber, new)
    return Scrubbed(value, found, scrubber, _KEY)


def create(scrubbed: Scrubbed, env_id: str, actor: Actor, now: datetime) -> SealedChange:
    """The new memory (version 1) of a scrubbed input and the version that creates it."""
    if type(scrubbed) is not Scrubbed:  # a subclass could carry anything
        raise TypeError("create needs a Scrubbed input (engram.scrub.sealed.scrub_new)")
    s = scrubbed.scrubber
    memory = build(env_id, scrubbed.value, actor, now, redactions=scrubbed.found.as_dict())
    if memory.author is not scrubbed.value.author and memory.author is not None:
        # the actor's user id stands in for an author not given: not from the scrubbed input
        author, found = s.scrub(memory.author)
        if author != memory.author or found:
            memory = memory.model_copy(
                update={"author": author, "redactions": (scrubbed.found + found).as_dict()}
            )
    c = record(memory, Action.CREATE, actor, "")
    return SealedChange(c.memory, c.version, scrubber=s, key=_KEY)


def is_sealed(c: Change, scrubber: Scrubber) -> bool:
    """Whether ``c`` was sealed here by ``scrubber`` and still records its own memory."""
    return (
        type(c) is SealedChange
        and c.scrubber is scrubber
        and c.version.snapshot is c.memory
        and c.version.reason == ""
    )
