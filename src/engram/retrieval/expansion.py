"""Query expansion by kind: a question that names a kind of thing ("which package manager",
"what editor", "our database") also looks for the things of that kind ("pnpm", "vim",
"postgres"), since the memory that answers it rarely repeats the question's noun: "Prefers
pnpm over npm" shares no word with "which package manager for javascript", and the default
static model puts it below an unrelated database note.

The kinds and their values are the lifecycle's (``lifecycle.claims.VALUE_CLASSES``: the same
vocabulary decides that "vim" and "emacs" fill one slot); the phrases that name a kind are
stricter here than the claims' attribute nouns ("code" or "order" alone name nothing). A value
found in a memory covers the query words that named its kind, so the keyword stream's coverage
(``retrieval.coverage``) counts "pnpm" as an answer to "package manager". Values that are also
everyday words or names ("poetry", "cargo", "fish", "safari", "ruby") cover them only beside
another word of their kind in the same memory ("uses poetry and pip", "the fish shell"): "I
love reading poetry" is no answer to "which package manager".

A word with a short and a long form in developers' notes ("prod" and "production", "repo",
"k8s", "postgres" and "postgresql": the stemmer keeps each pair apart) is searched in both, and
either covers the question's word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from engram.lifecycle.claims import VALUE_CLASSES
from engram.text import content_words, words

_NAMES: dict[str, tuple[str, ...]] = {
    "editor": ("editor", "editors", "ide", "code editor", "text editor"),
    "database": ("database", "databases", "db", "datastore"),
    "shell": ("shell", "login shell"),
    "language": ("programming language", "programming languages"),
    "package manager": ("package manager", "package managers"),
    "ci": ("ci", "ci provider", "ci server"),
    "os": ("os", "operating system", "distro"),
    "browser": ("browser", "browsers", "web browser"),
    "coffee": ("coffee",),
}
"""The phrases that name each of the lifecycle's kinds in a question (consecutive words)."""

_SEARCH_KINDS: dict[str, tuple[tuple[str, ...], str]] = {
    "test framework": (
        ("test framework", "test runner", "testing framework", "testing library"),
        "pytest jest vitest mocha jasmine rspec junit unittest playwright cypress",
    ),
    "web framework": (
        ("web framework", "frontend framework", "ui framework", "frontend", "backend framework"),
        "react vue svelte angular nextjs django flask fastapi rails laravel express spring",
    ),
    "cloud": (
        ("cloud", "cloud provider", "hosting", "hosted", "host"),
        "aws gcp azure heroku vercel netlify digitalocean cloudflare hetzner",
    ),
    "formatter": (("formatter", "formatting", "code style"), "black prettier ruff gofmt rustfmt"),
    "linter": (("linter", "linting", "lint"), "eslint ruff pylint flake8 clippy golangci"),
    "queue": (
        ("queue", "message queue", "job queue", "background jobs", "message broker"),
        "rabbitmq kafka redis sqs celery nats sidekiq",
    ),
    "monitoring": (
        ("monitoring", "observability", "logs", "logging", "metrics", "error tracking"),
        "grafana prometheus datadog sentry loki kibana elasticsearch",
    ),
}
"""Kinds that only search knows (the lifecycle does not treat them as one slot: a project may
use pytest and playwright at once): their names, and their values."""

_AMBIGUOUS = frozenset(
    """atom nano zed helix sublime oracle cassandra fish bash rust python java ruby swift scala
    elixir zig haskell bun poetry cargo uv pip conda drone travis jenkins woodpecker windows
    fedora safari brave chrome vivaldi mocha americano latte unittest express spring react
    black loki""".split()  # noqa: SIM905
)
"""Values that are also everyday words or names: they answer only beside their kind."""


_SAME = (
    "prod production",
    "repo repository",
    "repos repositories",
    "config configuration",
    "configs configurations",
    "env environment",
    "envs environments",
    "auth authentication",
    "docs documentation",
    "dep dependency",
    "deps dependencies",
    "infra infrastructure",
    "k8s kubernetes",
    "dev development",
    "perf performance",
    "impl implementation",
    "js javascript",
    "ts typescript",
    "postgres postgresql",
    "mongo mongodb",
    "nvim neovim",
    # what a question says and what the answer said: "where do I live" / "moved to Seville",
    # "any allergies" / "allergic to peanuts" (the stemmer keeps each pair apart)
    "live moved",
    "lives moved",
    "live relocated",
    "allergies allergic",
    "allergy allergic",
)
"""Short and long forms of one word in developers' notes, and the words a question and its
answer use for one thing (the stemmer keeps each pair apart)."""


def _both_ways(pairs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each word of a pair, with the other forms it has."""
    out: dict[str, tuple[str, ...]] = {}
    for pair in pairs:
        short, long = pair.split()
        out[short] = (*out.get(short, ()), long)
        out[long] = (*out.get(long, ()), short)
    return out


_ALSO = _both_ways(_SAME)

_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    *((names, " ".join(sorted(VALUE_CLASSES[kind][0]))) for kind, names in _NAMES.items()),
    *_SEARCH_KINDS.values(),
)


@dataclass(frozen=True, slots=True)
class Expansion:
    """``query``: the question; ``also``: the words its keyword search looks for beside its
    own (its kinds' values, other forms of its words); ``words``: the question's own distinct
    content words; ``kinds``: for each value, the
    question words naming its kind; ``kind_words``: for each value, every word of its kind
    (its fellow values and names), which an ambiguous value needs beside it."""

    query: str
    also: tuple[str, ...]
    words: frozenset[str]
    kinds: Mapping[str, frozenset[str]]
    kind_words: Mapping[str, frozenset[str]]

    def covered(self, matched: Iterable[str]) -> frozenset[str]:
        """The question's words that ``matched`` (words of the question or of :attr:`also` a
        memory contains) answers: its own words, and the kind named by a value found."""
        found = frozenset(matched)
        out = set(found & self.words)
        for value in found - self.words:
            named = self.kinds.get(value)
            if named is None:
                continue
            if value not in _AMBIGUOUS or (found - {value}) & self.kind_words[value]:
                out |= named
        return frozenset(out)


@lru_cache(maxsize=4096)
def expand(query: str) -> Expansion:
    """``query`` with the values of every kind it names and the other form of each word with
    a short and a long form ("prod", "production"); itself when there are none."""
    own = frozenset(content_words(query))
    sequence = words(query)
    kinds: dict[str, frozenset[str]] = {}
    kind_words: dict[str, frozenset[str]] = {}
    for names, every in _KINDS:
        named = frozenset(w for name in names for w in _found(name.split(), sequence)) & own
        if not named:
            continue
        values = content_words(every)
        fellows = frozenset(values) | {w for name in names for w in name.split()}
        for value in values:
            if value not in own:
                kinds[value] = kinds.get(value, frozenset()) | named
                kind_words[value] = kind_words.get(value, frozenset()) | fellows
    for word in own:
        for other in _ALSO.get(word, ()):
            if other not in own:
                kinds[other] = kinds.get(other, frozenset()) | {word}
                kind_words.setdefault(other, frozenset())
    if not kinds:
        return Expansion(query, (), own, {}, {})
    return Expansion(query, tuple(kinds), own, kinds, kind_words)


def _found(name: list[str], sequence: list[str]) -> list[str]:
    """``name``'s words when they occur consecutively in ``sequence``, else none."""
    n = len(name)
    for at in range(len(sequence) - n + 1):
        if sequence[at : at + n] == name:
            return name
    return []
