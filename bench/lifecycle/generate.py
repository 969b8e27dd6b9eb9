"""A fixed-seed stream of facts with known duplicates, updates and noise.

Every fact about a *slot* (a subject and an attribute) states one value. The stream mixes:
- ``new``: the first statement of a slot;
- ``dup``: the slot's current value again, reworded (words reordered, filler inserted) or, one
  time in five, verbatim; the lifecycle should merge it;
- ``update``: a different value for the slot, sometimes with "now"; the lifecycle should
  supersede the slot's current fact;
- ``noise``: one-off facts about nothing in particular; they should simply be stored.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PEOPLE = [
    "Alice",
    "Bruno",
    "Chen",
    "Dana",
    "Emeka",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jonas",
    "Keiko",
    "Lena",
    "Marco",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zara",
    "Abel",
    "Bianca",
    "Carlos",
    "Dmitri",
    "Elif",
    "Femi",
    "Greta",
    "Hugo",
    "Ines",
    "Jamal",
    "Kofi",
    "Lucia",
    "Mateo",
    "Nora",
    "Olga",
    "Pablo",
    "Rania",
    "Sami",
    "Tomas",
    "Ulla",
    "Vera",
    "Wilma",
    "Yara",
    "Zeno",
]
SURNAMES = [
    "Abara",
    "Berg",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fontaine",
    "Garcia",
    "Haddad",
    "Ito",
    "Jensen",
]
PROJECTS = [
    "atlas",
    "borealis",
    "cobalt",
    "dynamo",
    "ember",
    "falcon",
    "granite",
    "harbor",
    "iris",
    "juniper",
    "kestrel",
    "lumen",
    "meridian",
    "nimbus",
    "onyx",
    "polaris",
    "quartz",
    "raven",
    "sequoia",
    "tundra",
]

PERSON_ATTRS: dict[str, tuple[str, ...]] = {
    "favorite color": ("blue", "green", "crimson", "teal", "amber", "violet", "ochre"),
    "code editor": ("vim", "emacs", "vscode", "helix", "zed", "sublime", "nano"),
    "home city": ("Lisbon", "Berlin", "Osaka", "Nairobi", "Toronto", "Quito", "Oslo"),
    "coffee order": ("espresso", "cortado", "flat white", "cold brew", "americano", "mocha"),
    "login shell": ("bash", "zsh", "fish", "nushell", "tcsh", "xonsh"),
    "favorite language": ("rust", "python", "haskell", "golang", "kotlin", "elixir", "ocaml"),
    "desk number": tuple(str(n) for n in range(101, 131)),
}
PROJECT_ATTRS: dict[str, tuple[str, ...]] = {
    "deploy target": ("staging", "production", "canary", "preview", "sandbox"),
    "database engine": ("postgres", "mysql", "sqlite", "cockroachdb", "mariadb", "duckdb"),
    "ci provider": ("jenkins", "buildkite", "circleci", "drone", "travis", "woodpecker"),
    "license": ("apache", "mit", "bsd", "mpl", "gpl", "lgpl"),
    "python version": ("3.9", "3.10", "3.11", "3.12", "3.13"),
    "service port": tuple(str(n) for n in range(8000, 8040)),
    "release weekday": ("monday", "tuesday", "wednesday", "thursday", "friday"),
}
FILLERS = ("actually", "really", "definitely", "for sure", "as noted", "for the record")
TOPICS = [
    "tide pools",
    "glacier hikes",
    "sourdough starters",
    "vintage synths",
    "chess openings",
    "bonsai care",
    "lighthouse history",
    "origami cranes",
    "jazz drumming",
    "desert botany",
    "comet sightings",
    "bread ovens",
    "kite surfing",
    "moss gardens",
    "typewriter repair",
    "night markets",
    "rail tunnels",
]
ITEMS = ["apples", "pears", "lemons", "candles", "notebooks", "batteries", "plums", "stamps"]
PLACES = ["market", "bakery", "station", "library", "harbour", "museum", "pharmacy", "kiosk"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


@dataclass(frozen=True, slots=True)
class Item:
    text: str
    kind: str  # new | dup | update | noise
    slot: tuple[str, str] | None
    value: str | None


def _state(subject: str, attr: str, value: str, person: bool, rng: random.Random) -> str:
    if person:
        return rng.choice((f"{subject}'s {attr} is {value}", f"The {attr} of {subject} is {value}"))
    return rng.choice(
        (f"Project {subject} {attr} is {value}", f"The {attr} of project {subject} is {value}")
    )


def _reword(subject: str, attr: str, value: str, person: bool, rng: random.Random) -> str:
    who = subject if person else f"project {subject}"
    style = rng.randrange(4)
    if style == 0:  # reordered
        return f"{value.capitalize()} is the {attr} of {who}"
    if style == 1:  # inserted filler
        return f"{_state(subject, attr, value, person, rng)}, {rng.choice(FILLERS)}"
    if style == 2:
        return f"{rng.choice(FILLERS).capitalize()}, the {attr} of {who} is {value}"
    return f"{_state(subject, attr, value, person, rng)} {rng.choice(FILLERS)}"


def _update(subject: str, attr: str, value: str, person: bool, rng: random.Random) -> str:
    if rng.random() < 0.3:
        who = f"{subject}'s" if person else f"Project {subject}"
        return f"{who} {attr} is now {value}"
    return _state(subject, attr, value, person, rng)


def _noise(rng: random.Random) -> str:
    style = rng.randrange(3)
    if style == 0:
        return f"Read an article about {rng.choice(TOPICS)} on {rng.choice(DAYS)}"
    if style == 1:
        return (
            f"Bought {rng.randint(2, 40)} {rng.choice(ITEMS)} at the {rng.choice(PLACES)} "
            f"near {rng.choice(PEOPLE)}'s place"
        )
    return f"Watched a documentary on {rng.choice(TOPICS)} with {rng.choice(PEOPLE)}"


def stream(n: int, seed: int = 7) -> list[Item]:
    """``n`` facts: about 25 % first statements, 30 % duplicates, 20 % updates, 25 % noise."""
    rng = random.Random(seed)
    people = [f"{first} {last}" for first in PEOPLE for last in SURNAMES]
    projects = [f"{name}-{part}" for name in PROJECTS for part in ("web", "api", "infra", "ml")]
    slots = [(p, a, True) for p in people for a in PERSON_ATTRS] + [
        (p, a, False) for p in projects for a in PROJECT_ATTRS
    ]
    rng.shuffle(slots)
    pools = {**PERSON_ATTRS, **PROJECT_ATTRS}
    current: dict[tuple[str, str], tuple[str, str, bool]] = {}  # slot -> value, text, person
    fresh = iter(slots)
    out: list[Item] = []
    noise_seen: set[str] = set()
    while len(out) < n:
        r = rng.random()
        if r < 0.25 or not current:
            nxt = next(fresh, None)
            if nxt is None:
                r = 0.3  # every slot used: fall through to a duplicate
            else:
                subject, attr, person = nxt
                value = rng.choice(pools[attr])
                text = _state(subject, attr, value, person, rng)
                current[(subject, attr)] = (value, text, person)
                out.append(Item(text, "new", (subject, attr), value))
                continue
        slot = rng.choice(list(current))
        value, text, person = current[slot]
        if r < 0.55:
            dup = text if rng.random() < 0.2 else _reword(*slot, value, person, rng)
            out.append(Item(dup, "dup", slot, value))
        elif r < 0.75:
            new_value = rng.choice([v for v in pools[slot[1]] if v != value])
            new_text = _update(*slot, new_value, person, rng)
            current[slot] = (new_value, new_text, person)
            out.append(Item(new_text, "update", slot, new_value))
        else:
            text = _noise(rng)
            while text in noise_seen:  # noise is never said twice: a repeat would be a duplicate
                text = _noise(rng)
            noise_seen.add(text)
            out.append(Item(text, "noise", None, None))
    return out
