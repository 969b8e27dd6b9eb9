"""Facts from first-person statements: identity, preferences, habits, constraints, decisions,
plans, relationships and personal events, read with patterns (no model)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.extraction.conversation import Message, Speaker
from engram.extraction.person import to_third_person
from engram.extraction.proposals import Proposal
from engram.extraction.sentences import Sentence
from engram.text import content_words


@dataclass(frozen=True, slots=True)
class FactPattern:
    kind: str
    category: str
    importance: float
    regex: re.Pattern[str]
    confidence: float = 0.8


def _p(kind: str, category: str, importance: float, regex: str, conf: float = 0.8) -> FactPattern:
    return FactPattern(kind, category, importance, re.compile(regex, re.I), conf)


_I = r"\bI(?:'m| am|'ve| have)?\s+(?:(?:really|also|just|always|totally|absolutely|truly)\s+)?"
_FAMILY = (
    r"(?:sister|brother|mom|mother|mum|dad|father|parents?|wife|husband|partner|boyfriend|"
    r"girlfriend|son|daughter|kids?|children|child|grandma|grandmother|grandpa|grandfather|"
    r"aunt|uncle|cousin|family|friends?|best friend|boss|colleagues?|roommate|dog|cat|pets?|"
    r"team|manager|fianc[ée]e?)"
)

_SETUP = (
    r"(?:editor|ide|shell|terminal|os|laptop|machine|browser|language|stack|setup|database|db|"
    r"ci|pipeline|package manager|test runner|test framework|framework|formatter|linter|"
    r"timezone|time zone|keyboard|keyboard layout|theme|font|cloud|host|hosting|registry|"
    r"workflow|branch|default branch|build|deploys?|releases?|tests?|repo|monorepo)"
)
"""What a person's own setup is named in "my editor is Neovim", "our CI runs on GitHub"."""

# first match wins: the most specific and most important kinds come first
PATTERNS: tuple[FactPattern, ...] = (
    _p("allergy", "constraint", 0.9, r"\bI(?:'m| am) (?:severely |very )?allergic to\b"),
    _p(
        "constraint",
        "constraint",
        0.8,
        r"\bI (?:can't|cannot|can not|must not|mustn't|shouldn't|don't) (?:eat|drink|use|have|"
        r"stand|tolerate)\b|\bI(?:'m| am) (?:a )?(?:vegan|vegetarian|lactose intolerant|"
        r"diabetic|pescatarian|gluten[- ]free|sober|colou?r ?blind)\b|\bmy budget\b",
    ),
    _p(
        "decision",
        "decision",
        0.75,
        r"\b(?:we|I)(?:'ve| have)? (?:decided|agreed|chose|settled on|opted)\b|"
        r"\blet's (?:go with|use|stick with)\b|\bwe(?:'ll| will) go with\b|"
        r"\b(?:my|our|the) decision is\b",
    ),
    _p(
        "identity",
        "identity",
        0.7,
        r"\bmy name is\b|\bI (?:work|worked) (?:as|at|for|in)\b|\bI(?:'m| am) (?:a|an) "
        r"(?:[a-z-]+ )?(?:engineer|developer|teacher|nurse|doctor|student|designer|writer|"
        r"artist|manager|scientist|lawyer|musician|parent|mom|dad|mother|father|counsel?or|"
        r"chef|programmer|researcher|consultant|freelancer|founder|veteran|athlete|painter|"
        r"photographer|dancer|singer|volunteer)\b|\bI(?:'m| am) from\b|\bI (?:live|grew up) "
        r"in\b|\bI (?:moved|relocated) to\b|\bI was born\b|\bI(?:'m| am) \d{1,3}(?: years old)?"
        r"\b|\bI (?:studied|graduated|majored)\b|\bI(?:'m| am) (?:trans|transgender|gay|"
        r"lesbian|bisexual|queer|married|single|divorced|pregnant|retired)\b",
    ),
    _p(
        "preference",
        "preference",
        0.6,
        _I + r"(?:prefer|love|like|enjoy|hate|dislike|adore|can't stand|fancy)\b|"
        r"\bI(?:'m| am) (?:a (?:big |huge )?fan of|into|passionate about|obsessed with)\b|"
        r"\bmy (?:favou?rite|go-to)\b|\bI don't (?:like|enjoy|care for)\b",
    ),
    _p(
        "tool",
        "preference",
        0.6,
        r"\b(?:I|we)(?:'ve| have)? (?:(?:also|mostly|mainly|now|still|only|always) )?(?:use|"
        r"switched to|migrated to|(?:switched|migrated|moved) (?:over )?from|code in|write in|"
        r"program in|develop in|rely on|work with)\b|"
        r"\b(?:my|our) (?:main |default |usual |primary )?" + _SETUP + r" (?:is|are|runs?|uses?|"
        r"lives?|goes|go|was switched)\b|\bour [a-z]+ (?:runs on|is hosted on|uses)\b",
    ),
    _p(
        "habit",
        "habit",
        0.5,
        r"\bI (?:usually|always|often|regularly|normally|typically|tend to|never)\b|"
        r"\bI(?:'ve| have) been [a-z]+ing\b|\bevery (?:day|morning|evening|night|week|weekend|"
        r"month|year)\b|\bI [a-z]+ (?:daily|weekly)\b|\b(?:we|I) (?:deploy|release|ship|meet|"
        r"sync|merge|publish|demo|review) (?:on|every|each) [a-z]+",
    ),
    _p(
        "plan",
        "plan",
        0.55,
        r"\bI(?:'m| am) (?:going to|gonna|planning|hoping|thinking (?:of|about)|about to|"
        r"looking forward)\b|\bI (?:plan|intend|hope|want|aim) to\b|\bI(?:'ll| will) (?!be "
        r"(?:fine|ok|okay))\b|\bmy (?:plan|goal|dream) is\b|\bnext (?:week|month|year)\b",
        0.7,
    ),
    _p("relationship", "relationship", 0.6, r"\bmy " + _FAMILY + r"\b"),
    _p(
        "event",
        "event",
        0.45,
        r"\bI (?:just |recently |finally )?(?:went|visited|started|joined|got|bought|finished|"
        r"ran|took|made|adopted|attended|signed up|won|lost|painted|wrote|built|learned|"
        r"launched|completed|met|received|travel(?:l)?ed|moved|quit|began)\b",
        0.7,
    ),
)

_SKIP_RE = re.compile(
    r"^(?:thanks?|thank you|hi|hey|hello|bye|good ?bye|ok|okay|sure|wow|yes|no|yeah|lol)\b"
    r"|\b(?:if I|you said|you mentioned|would I|should I)\b",
    re.I,
)
_HEDGE_RE = re.compile(
    r"\b(?:maybe|perhaps|probably|might|I think|I guess|kind of|sort of)\b", re.I
)
_FIRST_PERSON_RE = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|we|we've|we're|let's|our)\b", re.I)
_LEAD_RE = re.compile(
    r"^(?:(?:great|ok|okay|so|well|yeah|yes|also|actually|btw|oh|anyway|and|but|honestly|"
    r"sure|right|cool|haha|wow|hey|by the way|basically|fyi|just so you know|for the record|"
    r"to be honest|in fact|plus|alright|um|uh)\b[,!.:]?\s+)+",
    re.I,
)
_INTRO = r"(?:hi|hey|hello)?[,!.]?\s*(?:I'm|I am|my name is|this is|it's)\s+"
"""A self-introduction, whose name follows."""
MIN_WORDS = 3
MAX_WORDS = 60
_CLAUSE_START = r"(?=(?:I(?:'m|'ve|'ll|'d)?|my|we(?:'re|'ve|'ll)?|our)\b)"
_CLAIM_SPLIT_RE = re.compile(
    r"(?:\s*,\s*|\s+)(?:and|but|while)\s+" + _CLAUSE_START + r"|\s*;\s*" + _CLAUSE_START
)


def speaks_for_self(role: Speaker) -> bool:
    """Only people's statements about themselves are facts (not an assistant's "I")."""
    return role is Speaker.USER


def match_fact(text: str, *, part: bool = False) -> FactPattern | None:
    """The pattern ``text`` states a fact by, if any. A ``part`` of a sentence that was split
    may be shorter than a sentence must ("I'm vegetarian" of "I'm vegetarian and I live in
    Oslo"): the rest of the sentence already said enough to be a fact."""
    if text.endswith("?") or _SKIP_RE.search(text) or not _FIRST_PERSON_RE.search(text):
        return None
    n = len(text.split())
    least_words, least_content = (2, 1) if part else (MIN_WORDS, 2)
    if n < least_words or n > MAX_WORDS or len(content_words(text)) < least_content:
        return None
    return next((p for p in PATTERNS if p.regex.search(text)), None)


def claim_parts(text: str) -> list[tuple[str, FactPattern]]:
    """The sentence's claims, each with its pattern: "I'm allergic to peanuts and I prefer vim
    over emacs" is two facts (a constraint and a preference), so that a later update of one
    never retires the other. Split only where "I" starts a new clause and every part is a
    fact on its own; otherwise the sentence stays whole."""
    whole = match_fact(text)
    parts = [p.strip() for p in _CLAIM_SPLIT_RE.split(text) if p.strip()]
    if len(parts) > 1:
        parts = [p if p[-1] in ".!?" else p + "." for p in parts]
        matched = [(p, match_fact(p, part=True)) for p in parts]
        if all(m is not None for _, m in matched):
            return [(p, m) for p, m in matched if m is not None]
    return [] if whole is None else [(text, whole)]


def fact_proposals(items: list[Sentence], others: dict[str, str]) -> list[Proposal]:
    """One proposal per first-person sentence that matches a pattern. ``others`` maps a speaker
    to who "we" means besides them (for "we decided")."""
    out: list[Proposal] = []
    seen: set[str] = set()
    for sentence in items:
        msg = sentence.message
        if not speaks_for_self(msg.role):
            continue
        for part, pattern in claim_parts(sentence.text.replace("’", "'")):
            proposal = _proposal(part, pattern, msg, others, seen)
            if proposal is not None:
                out.append(proposal)
    return out


def _without_introduction(said: str, name: str) -> str:
    """``said`` without its opening "I'm <name>" (or "my name is <name>") when ``name`` is
    the speaker's own: known already, it would read "Carol is Carol, Carol works at Acme".
    A different or fuller name ("I'm Carol Smith") is news and stays."""
    intro = re.match(
        _INTRO
        + re.escape(name)
        # not a longer name ("Carol Smith"), then the end or where the next claim starts
        + r"(?![\w'-])(?!\s+(?-i:[A-Z]))\s*(?:[,;.!]\s*(?:and\s+)?|\s+and\s+|$)",
        said,
        re.I,
    )
    if intro is None:
        return said
    rest = said[intro.end() :].strip()
    return rest[:1].upper() + rest[1:] if rest else ""


def _proposal(
    said: str, pattern: FactPattern, msg: Message, others: dict[str, str], seen: set[str]
) -> Proposal | None:
    """One fact in the third person, or None when the same text was already proposed."""
    speaker = msg.author or "the user"
    said = _LEAD_RE.sub("", said)
    if msg.author:
        rest = _without_introduction(said, msg.author)
        if rest != said:  # what is left of "I'm Carol, I work at Acme" said by Carol
            found = match_fact(rest, part=True) if rest else None
            if found is None:
                return None  # "Carol's name is Carol": nothing the author does not say
            said, pattern = rest, found
    text = to_third_person(said, speaker)
    if others.get(msg.speaker):
        who = f"{speaker} and {others[msg.speaker]}"
        text = re.sub(r"\b[Ll]et's\b", f"{who} will", text)
        # "our" after a "we" is theirs; alone ("Our CI runs on ...", a clause split from its
        # "we") it is the speaker's
        ours = "their" if re.search(r"\b[Ww]e\b", text) else f"{speaker}'s"
        text = re.sub(r"\b[Ww]e\b", who, text)
        text = re.sub(r"\b[Oo]ur\b", ours, text)
        text = re.sub(r"\bus\b", "them", text)
    text = text[:1].upper() + text[1:]
    key = text.lower()
    if key in seen:
        return None
    seen.add(key)
    confidence = pattern.confidence - (0.2 if _HEDGE_RE.search(said) else 0.0)
    return Proposal(
        content=text,
        category=pattern.category,
        kind=pattern.kind,
        importance=pattern.importance,
        confidence=round(confidence, 2),
        subject=msg.author,
        source_message_ids=[msg.id],
    )
