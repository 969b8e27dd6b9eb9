"""A hard stream: many facts about the same subjects, as people write them.

Each person and project has 20+ facts about different attributes (allergies, home, employer,
job, tools, pets, preferences, decisions ...), phrased as in real notes. The stream mixes:
- ``new``: the first statement of a slot (a subject and an attribute);
- ``bundle``: one fact stating two slots ("X is allergic to Y and X prefers A over B");
- ``dup``: the slot's current fact again, reworded or verbatim; it should be merged;
- ``update``: a new value for a slot ("moved to Y", "now uses Y", "switched from X to Y").
  When the slot's current fact states only that slot it should be superseded; when it is a
  bundle, the pair should go to review (never hidden);
- ``noise``: one-off facts about the same subjects, many with change words ("moved", "now",
  "switched") that replace nothing.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

Slot = tuple[str, str]  # (subject, attribute)


def _ws(text: str, sep: str | None = None) -> list[str]:
    return text.split(sep)


FIRST = _ws("Caroline Mateo Priya Jonas Keiko Omar Lucia Sven Amara Tomasz Ines Felix Noor Dmitri")
LAST = _ws("Okafor Lindqvist Moreau Tanaka Haddad Novak Ferreira Brennan")
PROJECTS = _ws("garden-app billing-api atlas-web orbit-ml harbor-infra lumen-docs kite-mobile")
CITIES = _ws("Lisbon Porto Berlin Osaka Nairobi Toronto Quito Oslo Madrid Seoul Denver Lyon")
COMPANIES = _ws("Acme Globex Initech Umbrella Hooli Vandelay Stark Wonka Soylent Cyberdyne")
JOBS = _ws("nurse teacher architect pilot chef lawyer plumber librarian dentist")
EDITORS = _ws("vim emacs vscode helix zed sublime")
SHELLS = _ws("bash zsh fish nushell")
LANGS = _ws("rust python haskell kotlin elixir ocaml")
COFFEE = _ws("espresso cortado americano mocha latte")
ALLERGENS = _ws("peanuts shellfish penicillin pollen latex sesame")
PETS = _ws("Rex Miso Biscuit Luna Pepper Olive Mochi")
COLORS = _ws("teal amber crimson violet ochre indigo")
OPTIONS = [("tabs", "spaces"), ("tea", "coffee"), ("mornings", "evenings"), ("trains", "planes")]
DBS = _ws("postgres mysql sqlite mariadb duckdb mongodb")
CIS = _ws("jenkins buildkite circleci drone woodpecker")
TARGETS = _ws("staging production canary preview")
LICENSES = _ws("apache mit bsd mpl gpl")
WEEKDAYS = _ws("monday tuesday wednesday thursday friday")
TOPICS = _ws("tide pools,sourdough,vintage synths,chess openings,bonsai,jazz drumming", ",")


@dataclass(frozen=True)
class Attr:
    name: str
    values: tuple[str, ...]
    importance: float
    state: tuple[str, ...]
    """Templates of a first statement: {s} subject, {v} value, {w} second option."""
    update: tuple[str, ...]
    reword: tuple[str, ...]


PERSON: tuple[Attr, ...] = (
    Attr(
        "home",
        tuple(CITIES),
        0.7,
        ("{s} lives in {v}.",),
        (
            "{s} moved to {v} last month.",
            "{s} relocated to {v}.",
            "{s} now lives in {v}.",
            "{s} moved from {o} to {v}.",
        ),
        ("{s} lives in {v}, for the record.", "As noted, {s} lives in {v}."),
    ),
    Attr(
        "employer",
        tuple(COMPANIES),
        0.7,
        ("{s} works at {v}.",),
        ("{s} now works at {v}.", "{s} started working at {v} this spring."),
        ("{s} works at {v}, actually.", "For the record, {s} works at {v}."),
    ),
    Attr(
        "job",
        tuple(JOBS),
        0.6,
        ("{s} works as a {v}.",),
        ("{s} works as a {v} now.",),
        ("{s} works as a {v}, really.",),
    ),
    Attr(
        "editor",
        tuple(EDITORS),
        0.6,
        ("{s} uses {v} for coding.", "{s}'s code editor is {v}."),
        ("{s} switched to {v}.", "{s} now uses {v} for coding.", "{s} switched from {o} to {v}."),
        ("{s} uses {v} for coding, definitely.", "{s}'s code editor is {v}, as noted."),
    ),
    Attr(
        "shell",
        tuple(SHELLS),
        0.4,
        ("{s}'s login shell is {v}.",),
        ("{s}'s login shell is now {v}.",),
        ("The login shell of {s} is {v}.",),
    ),
    Attr(
        "language",
        tuple(LANGS),
        0.5,
        ("{s}'s favorite programming language is {v}.",),
        ("{s}'s favorite programming language is now {v}.",),
        ("The favorite programming language of {s} is {v}.",),
    ),
    Attr(
        "coffee",
        tuple(COFFEE),
        0.3,
        ("{s}'s usual coffee order is a {v}.",),
        ("{s}'s usual coffee order is now a {v}.",),
        ("{s}'s usual coffee order is a {v}, really.",),
    ),
    Attr(
        "allergy",
        tuple(ALLERGENS),
        0.9,
        ("{s} is allergic to {v}.",),
        (),
        ("{s} is allergic to {v}, definitely.", "As noted, {s} is allergic to {v}."),
    ),
    Attr(
        "pet",
        tuple(PETS),
        0.5,
        ("{s} has a dog named {v}.",),
        (),
        ("{s} has a dog named {v}, for the record.",),
    ),
    Attr(
        "color",
        tuple(COLORS),
        0.3,
        ("{s}'s favorite color is {v}.",),
        ("{s}'s favorite color is now {v}.",),
        ("{s}'s favorite color is {v}, actually.",),
    ),
    Attr(
        "desk",
        tuple(str(n) for n in range(101, 140)),
        0.4,
        ("{s}'s desk number is {v}.",),
        ("{s}'s desk number is now {v}.",),
        ("The desk number of {s} is {v}.",),
    ),
)
PREFERENCES = tuple(
    Attr(
        f"prefers {a}/{b}",
        (a, b),
        0.6,
        ("{s} prefers {v} over {w}.",),
        ("{s} now prefers {v} over {w}.",),
        ("{s} prefers {v} over {w}, really.",),
    )
    for a, b in OPTIONS
)
PROJECT: tuple[Attr, ...] = (
    Attr(
        "database",
        tuple(DBS),
        0.75,
        ("The {s} project uses {v} as its database.", "We decided to use {v} for {s}."),
        (
            "The {s} project moved to {v}.",
            "The {s} project now uses {v} as its database.",
            "The {s} project switched from {o} to {v} as its database.",
        ),
        ("The {s} project uses {v} as its database, as noted.",),
    ),
    Attr(
        "ci",
        tuple(CIS),
        0.5,
        ("The {s} project uses {v} for its ci.",),
        ("The {s} project switched to {v} for its ci.", "The {s} project moved from {o} to {v}."),
        ("The {s} project uses {v} for its ci, really.",),
    ),
    Attr(
        "deploy target",
        tuple(TARGETS),
        0.6,
        ("The deploy target of {s} is {v}.",),
        ("The deploy target of {s} is now {v}.",),
        ("The deploy target of {s} is {v}, for the record.",),
    ),
    Attr(
        "license",
        tuple(LICENSES),
        0.8,
        ("The license of {s} is {v}.",),
        ("The license of {s} is now {v}.",),
        ("The license of {s} is {v}, definitely.",),
    ),
    Attr(
        "release day",
        tuple(WEEKDAYS),
        0.5,
        ("The release day of {s} is {v}.",),
        ("The release day of {s} is now {v}.",),
        ("The release day of {s} is {v}, as noted.",),
    ),
    Attr(
        "port",
        tuple(str(n) for n in range(8000, 8030)),
        0.4,
        ("The service port of {s} is {v}.",),
        ("The service port of {s} is now {v}.",),
        ("The service port of {s} is {v}, actually.",),
    ),
)
NOISE = (
    "{s} moved the team standup to a bigger room today.",
    "{s} now walks to the office on sunny days.",
    "{s} switched seats with a colleague for the afternoon.",
    "{s} read an article about {t} on the train.",
    "{s} watched a documentary on {t} with friends.",
    "{s} changed the meeting agenda twice this week.",
    "{s} stopped by the bakery near the station.",
    "{s} replaced a broken keyboard key on Tuesday.",
)


@dataclass
class Item:
    text: str
    kind: str  # new | bundle | dup | update | noise
    slots: dict[Slot, str] = field(default_factory=dict)
    """The slots this fact states, with their values."""
    importance: float = 0.5
    replaces: Slot | None = None
    """For an update: the slot it changes."""
    holder: Item | None = None
    """For an update: the fact that held the slot until now (a bundle should be queued)."""


def _fill(template: str, subject: str, value: str, attr: Attr, old: str = "") -> str:
    """``old``: for an update, the value it replaces ({o}: "switched from {o} to {v}")."""
    other = next((v for v in attr.values if v != value), value)
    return template.format(s=subject, v=value, w=other, o=old, t="")


def hard_stream(seed: int = 11, people: int = 24, projects: int = 7) -> list[Item]:
    """About 3,000 facts over ``people`` people and ``projects`` projects."""
    rng = random.Random(seed)
    names = [f"{first} {last}" for first in FIRST for last in LAST]
    rng.shuffle(names)
    subjects = [(n, (*PERSON, *PREFERENCES)) for n in names[:people]]
    subjects += [(p, PROJECT) for p in PROJECTS[:projects]]
    slots = [(s, a) for s, attrs in subjects for a in attrs]
    rng.shuffle(slots)
    stated: set[Slot] = set()
    noise_seen: set[str] = set()
    current: dict[Slot, tuple[str, Item, Attr]] = {}  # slot -> value, holder, attribute
    fresh = iter(slots)
    out: list[Item] = []
    pending = len(slots)
    while pending or len(out) < 3000:
        r = rng.random()
        if (r < 0.32 or not current) and pending:
            subject, attr = next(fresh)
            pending -= 1
            if (subject, attr.name) in stated:
                continue
            value = rng.choice(attr.values)
            second = None
            if attr in PERSON and rng.random() < (0.8 if attr.name == "allergy" else 0.2):
                # a bundle: this slot and another of the same person in one fact
                free = [
                    a2
                    for a2 in (*PREFERENCES, *PERSON)
                    if a2.name != attr.name
                    and a2.name != "allergy"
                    and (subject, a2.name) not in stated
                ]
                if free:
                    a2 = free[0] if attr.name == "allergy" else rng.choice(free)
                    second = (a2, rng.choice(a2.values))
            text = _fill(rng.choice(attr.state), subject, value, attr)
            item = Item(text, "new", {(subject, attr.name): value}, attr.importance)
            if second is not None:  # a bundle: the allergy and a preference in one fact
                a2, v2 = second
                more = _fill(a2.state[0], subject, v2, a2)
                both = {**item.slots, (subject, a2.name): v2}
                item = Item(f"{text[:-1]} and {more}", "bundle", both, max(0.6, attr.importance))
                current[(subject, a2.name)] = (v2, item, a2)
                stated.add((subject, a2.name))
            current[(subject, attr.name)] = (value, item, attr)
            stated.add((subject, attr.name))
            out.append(item)
            continue
        if not current:
            break
        slot = rng.choice(list(current))
        value, holder, attr = current[slot]
        subject = slot[0]
        if r < 0.52:
            if holder.kind == "bundle":
                continue  # a bundle said again is rare; keep dups single-claim
            reword = rng.random() < 0.75
            text = _fill(rng.choice(attr.reword), subject, value, attr) if reword else holder.text
            out.append(Item(text, "dup", dict(holder.slots), holder.importance))
        elif r < 0.8:
            if not attr.update:
                continue
            new_value = rng.choice([v for v in attr.values if v != value])
            text = _fill(rng.choice(attr.update), subject, new_value, attr, value)
            item = Item(text, "update", {slot: new_value}, attr.importance, slot, holder)
            current[slot] = (new_value, item, attr)
            out.append(item)
        else:
            topic = rng.choice(TOPICS)
            text = rng.choice(NOISE).format(s=subject, t=topic)
            if text in noise_seen:
                continue
            noise_seen.add(text)
            out.append(Item(text, "noise", {}, 0.3))
    return out
