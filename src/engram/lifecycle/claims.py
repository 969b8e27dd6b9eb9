"""Claims: what a fact states, as (subject, attribute, value) triples read with rules.

A contradiction needs two claims about the same *slot*: the same subject and the same
attribute (where someone lives, which database a project uses, a preference between the same
options). A fact that bundles several claims ("Caroline is allergic to peanuts and prefers vim
over emacs") yields one claim per clause, so that a new fact about one of them says nothing
about the others.

An attribute is found, in order, from
- a relation phrase ("lives in", "moved to", "allergic to", "works at", "prefers X over Y",
  "uses X as the database");
- the class of the value ("vim" is an editor, "postgres" a database, "zsh" a shell);
- attribute nouns before the verb ("home city", "code editor", "database engine");
- else the words before the verb themselves ("the deploy target of project atlas"), which
  then name subject and attribute together.

Claims whose attribute holds many values at once (allergies, pets, "likes", "uses" with no
known class) add a value instead of replacing one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from engram.text import STOPWORDS, words

NEGATIONS = frozenset(
    """not no never nor neither nobody nothing none without cannot can't don't doesn't didn't
    isn't aren't wasn't weren't won't wouldn't shouldn't hasn't haven't hadn't couldn't
    mustn't""".split()  # noqa: SIM905
)
CHANGE_MARKERS = (
    "no longer",
    "not anymore",
    "anymore",
    "any more",
    "switched to",
    "switched from",
    "switched",
    "moved to",
    "moved",
    "changed to",
    "changed",
    "now",
    "nowadays",
    "these days",
    "instead",
    "stopped",
    "replaced",
    "became",
    "from now on",
)
MARKER_WORDS = frozenset(w for m in CHANGE_MARKERS for w in m.split())
FILLERS = frozenset(
    """actually really definitely honestly basically certainly sure record noted still
    currently always named called""".split()  # noqa: SIM905
)


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_QUALIFIERS = _set("favorite favourite preferred main default primary usual current go-to own")

# attribute -> (value words of that class, nouns that name the attribute)
VALUE_CLASSES: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "editor": (
        _set(
            "vim neovim nvim emacs vscode helix zed sublime nano intellij pycharm kakoune "
            "notepad++ atom"
        ),
        _set("editor editors ide code text"),
    ),
    "database": (
        _set(
            "postgres postgresql mysql sqlite mariadb mongodb mongo cockroachdb duckdb "
            "dynamodb cassandra oracle firestore supabase"
        ),
        _set("database databases db datastore engine storage"),
    ),
    "shell": (
        _set("bash zsh fish nushell tcsh xonsh powershell ksh"),
        _set("shell login terminal"),
    ),
    "language": (
        _set(
            "rust python haskell golang kotlin elixir ocaml java typescript javascript ruby "
            "scala swift clojure erlang zig"
        ),
        _set("language languages programming"),
    ),
    "package manager": (
        _set("npm pnpm yarn bun pip poetry uv conda cargo"),
        _set("package packages manager installs installer"),
    ),
    "ci": (
        _set("jenkins buildkite circleci drone travis woodpecker teamcity"),
        _set("ci provider pipeline pipelines builds"),
    ),
    "os": (
        _set("linux ubuntu debian fedora macos windows nixos archlinux"),
        _set("os operating system distro laptop"),
    ),
    "browser": (
        _set("firefox chrome chromium safari brave vivaldi"),
        _set("browser"),
    ),
    "coffee": (
        _set("espresso cortado americano mocha latte cappuccino macchiato"),
        _set("coffee order drink"),
    ),
}
_ATTRIBUTE_NOUNS: dict[str, frozenset[str]] = {
    "location": _set("home city town hometown address residence apartment flat"),
    "employer": _set("employer company workplace"),
    "occupation": _set("job occupation role position profession title"),
    **{name: nouns for name, (_, nouns) in VALUE_CLASSES.items()},
}

# (attribute, pattern, many-valued); the first match in a clause wins
_RELATIONS: tuple[tuple[str, re.Pattern[str], bool], ...] = tuple(
    (name, re.compile(rx), many)
    for name, rx, many in (
        ("allergy", r"\ballergic to\b|\ballerg(?:y|ies) to\b", True),
        (
            "location",
            r"\b(?:lives?|living|lived|resides?|residing|based|(?:moved|moving|relocated|"
            r"relocating)(?: back)?|settled(?: down)?)\s+(?:in|to)\b|\bhome (?:city|town) is\b",
            False,
        ),
        ("origin", r"\b(?:is|are|comes?|came) from\b|\bgrew up in\b|\bwas born in\b", False),
        (
            "employer",
            r"\b(?:works?|working|worked|employed|job)\s+(?:at|for|with)\b|"
            r"\b(?:joined|started at)\s+(?=[a-z0-9]+\s+as\b)",
            False,
        ),
        ("occupation", r"\bworks? as\b|\b(?:job|role|position|occupation) is\b", False),
        (
            "pet",
            r"\b(?:has|have|had|adopted|got)\s+(?:a|an|one|two|three|\d+)\s+(?:\w+\s+)?"
            r"(?:dog|dogs|cat|cats|puppy|kitten|parrot|rabbit|hamster|pets?)\b",
            True,
        ),
        ("prefer", r"\bprefer(?:s|red|ring)?\b", False),
        (
            "uses",
            r"\b(?:uses?|using|used|switched(?: over)? to|switched|moved to|migrated to|"
            r"adopted|picked|chose|chosen|opted for|settled on|went with|goes with|go with|"
            r"runs? on|stick with|sticks with)\b",
            True,
        ),
        ("like", r"\b(?:likes?|loves?|enjoys?|adores?|fan of|(?:is|am|are) into)\b", True),
        ("dislike", r"\b(?:hates?|dislikes?|can't stand|cannot stand)\b", True),
        ("own", r"\b(?:owns?|drives?|rides?|plays?|speaks?|eats?|drinks?)\b", True),
    )
)
_ANY_RELATION = re.compile("|".join(f"(?:{rx.pattern})" for _, rx, _ in _RELATIONS))
"""Matches where any relation does: one search tells a clause with none (most) at once."""
_COPULA = frozenset(
    """is are was were am be equals means costs set defaults located called named starts start
    begins ends happens meets runs""".split()  # noqa: SIM905
)
_OPTIONS_RE = re.compile(r"\b(?:over|to|rather than|instead of|than)\b")
_PURPOSE_RE = re.compile(
    r"\b(?:as|for)\s+(?:the|our|their|its|his|her|a|an|my)\s+(?:main\s+|primary\s+|default\s+)?"
    r"([a-z]+(?:\s+[a-z]+)?)"
)
_NAMED_FOR_RE = re.compile(r"\b(?:for|of|in|on)\s+(?:the\s+)?([A-Z][\w-]*|[\w]+-[\w-]+)")
"""A name after "for": capitalised, or a hyphenated project slug."""
_FOR_SUBJECT_RE = re.compile(r"\b(?:for|in|on)\s+(?:the|our|their|its)\s+(.+)$")
_CLAUSE_RE = re.compile(r"\s*(?:;|,\s*and\s+|,\s*but\s+|\s+and\s+|\s+but\s+|,\s*while\s+|,\s+)\s*")
_NAME_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_FROM_TO_RE = re.compile(
    r"\b(switched|switching|moved|moving|changed|changing|migrated|migrating|relocated|"
    r"relocating)((?:\s+over|\s+back)?)\s+from\s+[^,;]+?\s+to\b",
    re.IGNORECASE,
)
"""A change "from X to Y": what holds now is Y ("switched from postgres to mysql as the
database" states the database is mysql)."""
_FROM_ONLY_RE = re.compile(
    r"\b(?:switched|moved|migrated)(?:\s+away)?\s+from\b(?!.*\bto\b)", re.IGNORECASE
)
"""A change away "from X" with no new value: X no longer holds ("switched from vim")."""


def _changes_read(clause: str) -> str:
    """``clause`` with a change read as the state it leaves: "moved from Porto to Lisbon" ->
    "moved to Lisbon", "switched from vim" -> "no longer uses vim" (for claims only; the
    memory's text is untouched)."""
    clause = _FROM_TO_RE.sub(r"\1\2 to", clause)
    return _FROM_ONLY_RE.sub("no longer uses", clause)


@dataclass(frozen=True, slots=True)
class Claim:
    """One (subject, attribute, value) statement."""

    subject: frozenset[str]
    attribute: str
    value: frozenset[str]
    core: str
    """The value's first content word: 'lisbon' in 'moved to Lisbon last month'."""
    negated: bool
    many: bool
    explicit: bool
    """The attribute is named (relation, value class, attribute noun), not inferred from a
    bare verb."""
    marker: str | None
    """The change marker ("now", "switched to", "no longer" ...) in the clause, if any."""
    shown: str = ""
    """The value's first word as written, for reasons."""

    @property
    def changed(self) -> bool:
        return self.marker is not None

    def show(self) -> str:
        who = " ".join(sorted(self.subject)) or "(implicit)"
        return f"{who} · {self.attribute}"


@lru_cache(maxsize=65_536)
def norm(word: str) -> str:
    """A crude stem, enough to see 'likes' and 'like' or "alice's" and 'alice' as one word."""
    word = word.removesuffix("'s").removesuffix("'")
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


_CLASS_OF = {norm(w): name for name, (values, _) in VALUE_CLASSES.items() for w in values}
"""Value word (normalised, as claims hold it) -> its attribute."""
_DROP = STOPWORDS | NEGATIONS | MARKER_WORDS | FILLERS
_NOT_SUBJECT = frozenset(
    """decided decide agreed agree want wants wanted plan plans planned planning going will
    would try tries tried started start starts begun began""".split()  # noqa: SIM905
)
_CLASSED = frozenset({"uses", "prefer", "like", "location"})
"""Attributes the value's class overrides: "moved to Postgres" is about a database."""


def _content(ws: list[str]) -> list[str]:
    return [norm(w) for w in ws if w not in _DROP]


def _names(text: str) -> set[str]:
    """Capitalised words (names of people, places, products), normalised."""
    return {norm(t.lower().replace("’", "'")) for t in _NAME_RE.findall(text) if t[0].isupper()}


def _marker(ws: list[str]) -> str | None:
    joined = f" {' '.join(ws)} "
    return next((m for m in CHANGE_MARKERS if f" {m} " in joined), None)


def _shown(ws: list[str]) -> str:
    return next((w for w in ws if w not in _DROP), "")


def clauses(text: str) -> list[str]:
    """The clauses of ``text`` that each state something: split at "and", "but", ";", but
    only where the part after it has a verb of its own ("Alice and Bob like chess" stays
    whole)."""
    parts = [p for p in _CLAUSE_RE.split(text.strip().rstrip(".!")) if p.strip()]
    out: list[str] = []
    pending = ""
    for part in parts:
        part = f"{pending} and {part}" if pending else part
        pending = ""
        if _has_verb(part):
            out.append(part)
        elif out:
            out[-1] = f"{out[-1]} and {part}"
        else:
            pending = part
    if pending:
        out.append(pending)
    return out


def _has_verb(part: str) -> bool:
    low = part.lower()
    if _relates(low):
        return True
    return any(w in _COPULA for w in words(low))


@lru_cache(maxsize=4096)
def _relates(low: str) -> bool:
    """Whether any relation matches in the lowercased clause (its relation claim asks again:
    the one search of the clause's whole alternation is the costly part of reading it)."""
    return _ANY_RELATION.search(low) is not None


def _after_options(value_text: str) -> tuple[str, frozenset[str]] | None:
    """'vim over emacs' -> ('vim', {'vim', 'emacs'})."""
    m = _OPTIONS_RE.search(value_text)
    if m is None:
        return None
    first, second = _content(words(value_text[: m.start()])), _content(words(value_text[m.end() :]))
    if not first or not second:
        return None
    return first[0], frozenset({first[0], second[0]})


def _relation_claim(clause: str, low: str) -> Claim | None:
    if not _relates(low):
        return None
    for attribute, rx, many in _RELATIONS:
        m = rx.search(low)
        if m is None:
            continue
        before, after = low[: m.start()], low[m.end() :]
        before_ws, after_ws = words(before), words(after)
        negated = any(w in NEGATIONS for w in before_ws + words(m.group(0)))
        changed = _marker(words(low))
        subject = [w for w in _content(before_ws) if w not in _NOT_SUBJECT]
        value = _content(after_ws)
        if not value:
            return None
        explicit = attribute not in ("uses", "like", "dislike", "own", "prefer")
        if attribute == "prefer":
            options = _after_options(after)
            if options is not None:
                core, pair = options
                attribute, explicit = "prefer " + " | ".join(sorted(pair)), True
                value = [core, *value]
        if attribute == "uses" or attribute == "prefer" or attribute == "like":
            purpose = _PURPOSE_RE.search(after)
            if purpose is not None:
                noun = _content(words(purpose.group(1)))
                named = next((a for a, ns in _ATTRIBUTE_NOUNS.items() if set(noun) & ns), None)
                if named is not None or noun:
                    attribute = named or " ".join(noun)
                    many, explicit = False, True
                    extra = _FOR_SUBJECT_RE.search(after[purpose.end() :])
                    if extra is not None:
                        subject = [*subject, *_content(words(extra.group(1)))]
                    value = _content(words(after[: purpose.start()])) or value
            else:
                named_for = _NAMED_FOR_RE.search(clause[m.end() :])
                if named_for is not None:  # "use sqlite for harbor-infra": the project
                    extra_ws = _content(words(named_for.group(1)))
                    subject = [*subject, *extra_ws]
                    value = [w for w in value if w not in extra_ws] or value
        cls = (
            _CLASS_OF.get(value[0]) if attribute in _CLASSED or attribute[:6] == "prefer" else None
        )
        if cls is not None:
            attribute, many, explicit = cls, False, True
        subject_set = frozenset(subject) - _nouns_of(attribute) - _QUALIFIERS
        return Claim(
            subject_set,
            attribute,
            frozenset(value),
            value[0],
            negated,
            many,
            explicit,
            changed,
            _shown(after_ws),
        )
    return None


def _nouns_of(attribute: str) -> frozenset[str]:
    return _ATTRIBUTE_NOUNS.get(attribute, frozenset())


def _head(key_ws: list[str]) -> str:
    """The noun that names the attribute: the last word before "of" ("the home city of
    Alice"), else the last word ("Alice's home city")."""
    if "of" in key_ws:
        key_ws = key_ws[: key_ws.index("of")]
    content = _content(key_ws)
    return content[-1] if content else ""


def _copula_claim(clause: str, low: str) -> Claim | None:
    ws = words(low)
    for i, w in enumerate(ws):
        if w not in _COPULA or i == 0:
            continue
        key_ws, value_ws = ws[:i], ws[i + 1 :]
        if value_ws[:1] == ["the"] and "of" in value_ws:
            key_ws, value_ws = value_ws, key_ws  # "Blue is the favorite color of Alice"
        key, value = _content(key_ws), _content(value_ws)
        if not key or not value:
            return None
        negated = any(x in NEGATIONS for x in ws)
        changed = _marker(ws)
        shown = _shown(value_ws)
        cls = _CLASS_OF.get(value[0])
        head = _head(key_ws)
        named = next((a for a, ns in _ATTRIBUTE_NOUNS.items() if head in ns), None)
        attribute = cls or named
        if attribute is not None:
            subject = frozenset(key) - _nouns_of(attribute) - _QUALIFIERS - {head}
            return Claim(
                subject, attribute, frozenset(value), value[0], negated, False, True, changed, shown
            )
        if set(key) <= _names(clause):
            # "Caroline is a nurse": a description, one of many
            return Claim(
                frozenset(key),
                "is",
                frozenset(value),
                value[0],
                negated,
                True,
                False,
                changed,
                shown,
            )
        return Claim(
            frozenset(key), "=", frozenset(value), value[0], negated, False, True, changed, shown
        )
    return None


_ALIASES = (
    (re.compile(r"\b(?:vs|visual\s+studio)\s+code\b", re.IGNORECASE), "VSCode"),
    (re.compile(r"\bsublime\s+text\b", re.IGNORECASE), "Sublime"),
    (re.compile(r"\bintellij\s+idea\b", re.IGNORECASE), "IntelliJ"),
)
"""Names of two words read as the one value word their class knows ("VS Code" is the editor
vscode, not the words "vs" and "code")."""


def _aliased(text: str) -> str:
    for pattern, name in _ALIASES:
        if pattern.search(text):
            text = pattern.sub(name, text)
    return text


@lru_cache(maxsize=65_536)
def claims(text: str) -> tuple[Claim, ...]:
    """The claims of ``text``, one per clause that states something. A clause with no
    subject of its own ("... and prefers vim") takes the previous clause's."""
    out: list[Claim] = []
    for said in clauses(_aliased(text.replace("’", "'"))):
        clause = _changes_read(said)
        low = clause.lower()
        claim = _relation_claim(clause, low) or _copula_claim(clause, low)
        if claim is None:
            continue
        if not claim.subject and out:
            claim = replace(claim, subject=out[-1].subject)
        out.append(claim)
    return tuple(out)


def lookup_terms(text: str) -> str:
    """The words to look candidates up by: the text's content words without fillers, change
    markers and each claim's value words after the first (what a duplicate or a conflicting
    fact must share: subject, attribute, value). Fewer terms make the keyword lookup cheaper."""
    found = claims(text)
    extra = {w for c in found for w in c.value if w != c.core}
    kept = [w for w in words(text) if w not in _DROP and norm(w) not in extra]
    return " ".join(dict.fromkeys(kept)) or text
