"""Secrets are never stored: the scrubber, and the store that applies it to every write.

What: :class:`Scrubber` replaces each secret it finds (bearer tokens, API keys of the common
providers, AWS ids and secret keys, JWTs, PEM private keys, passwords in URLs, auth headers and
cookies, ``NAME_KEY=value`` assignments...; see :mod:`engram.scrub.patterns`) with a marker
naming its kind, ``[REDACTED:github_token]``, and drops ``<private>…</private>`` spans. Sites add
patterns and an allowlist through :class:`ScrubConfig` (``<home>/scrub.toml``, read by
:func:`engram.scrub.config.load_scrub_config` at entry points).

Where, so that no path can skip it: one choke point at the boundary between the services and
the store. :class:`engram.Engram` wraps its store in :class:`ScrubbingStore` before it builds
any service; every write method of the store and of its sub-stores (memories and versions, the
audit log, Soul blocks and snapshots, the review queue, conversations and messages,
environments) scrubs every free-text string of what it is given (:func:`scrub_value` walks
models, dicts and lists; only ids, versions, enums and timestamps are skipped). A new service,
coding-agent hook or importer stores through ``engram.store`` or a service, so it gets scrubbing
for free; a field added to a model later is scrubbed by default.

Why not a typed ``Scrubbed[T]`` the store methods require: it would change every store method's
signature in both backends and every caller, and a new store method could still take raw text.
The wrapper needs no change elsewhere, and ``tests/test_scrub_everywhere.py`` proves the
property end to end: secrets planted through every interface are absent from the database
files' bytes.

The memory services also scrub their *inputs* first (``MemoryService.add_many``/``update_many``,
``LifecycleService.remember``, conversation messages, Soul text), so dedup, embeddings and the
value returned never see a secret and the result reports ``redactions`` (kind → count); the audit
entry of the write gets the same counts under ``details.redactions`` (counts, never secrets).
"""

TYPE_CHECKING = False  # typing is not imported: the hook client starts faster
if TYPE_CHECKING:
    from typing import Any

    from engram.scrub.scrubber import PRIVATE, Redactions, Scrubber, ScrubConfig, marker
    from engram.scrub.values import scrub_value

__all__ = ["PRIVATE", "Redactions", "ScrubConfig", "Scrubber", "marker", "scrub_value"]


def __getattr__(name: str) -> "Any":
    # imported on first use: the hook client scrubs with engram.scrub.core alone (no
    # dataclasses), and scrub_value walks pydantic models
    if name == "scrub_value":
        from engram.scrub.values import scrub_value

        return scrub_value
    if name in __all__:
        from engram.scrub import scrubber

        return getattr(scrubber, name)
    raise AttributeError(f"module 'engram.scrub' has no attribute {name!r}")
