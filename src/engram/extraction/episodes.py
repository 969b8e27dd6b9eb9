"""An episode from a conversation: an extractive summary (the sentences closest to the
TF-IDF centroid of the whole conversation), its key decisions and its open questions."""

from __future__ import annotations

import math
import re
from collections import Counter

from engram.extraction.conversation import Speaker, Transcript
from engram.extraction.dates import annotate
from engram.extraction.proposals import Proposal
from engram.extraction.sentences import Sentence, list_item
from engram.limits import MAX_NAME_CHARS
from engram.models import EpisodeDetails
from engram.text import content_words

SUMMARY_SENTENCES = 5
MAX_SENTENCE_WORDS = 60
_SOCIAL_Q_RE = re.compile(
    r"^(?:how (?:are|have|is|was) (?:you|it|things|everything)|what'?s up|how'?s it going|"
    r"you know\??|right\??|really\??|isn't it|what about you|and you|anything (?:new|else))",
    re.I,
)
_NO_ANSWER_RE = re.compile(r"\b(?:I don't know|not sure|no idea|can't say|unclear)\b", re.I)


def _tfidf(docs: list[list[str]]) -> list[dict[str, float]]:
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(set(doc))
    n = len(docs)
    out = []
    for doc in docs:
        tf = Counter(doc)
        vec = {w: (1 + math.log(c)) * math.log((1 + n) / (1 + df[w])) + 1e-9 for w, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out.append({w: v / norm for w, v in vec.items()})
    return out


def salient(items: list[Sentence], k: int = SUMMARY_SENTENCES) -> list[Sentence]:
    """The ``k`` sentences nearest the centroid, in conversation order."""
    usable = [
        s
        for s in items
        if s.message.role in (Speaker.USER, Speaker.ASSISTANT)
        and not s.is_question
        and list_item(s.text) is None
        and not s.text.endswith(":")
        and 4 <= len(s.text.split()) <= MAX_SENTENCE_WORDS
    ]
    docs = [content_words(s.text) for s in usable]
    pairs = [(s, d) for s, d in zip(usable, docs, strict=True) if len(d) >= 2]
    if not pairs:
        return []
    vecs = _tfidf([d for _, d in pairs])
    centroid: Counter[str] = Counter()
    for vec in vecs:
        centroid.update(vec)
    scored = []
    for (sentence, _), vec in zip(pairs, vecs, strict=True):
        score = sum(v * centroid[w] for w, v in vec.items())
        scored.append((score, sentence))
    scored.sort(key=lambda x: -x[0])
    chosen, seen = [], set()
    for _, sentence in scored:
        key = frozenset(content_words(sentence.text))
        if key in seen:
            continue
        seen.add(key)
        chosen.append(sentence)
        if len(chosen) == k:
            break
    return sorted(chosen, key=lambda s: s.index)


def open_questions(items: list[Sentence]) -> list[Sentence]:
    """Questions no later message from someone else answers (shares enough words with)."""
    out = []
    for q in items:
        if not q.is_question or q.message.role not in (Speaker.USER, Speaker.ASSISTANT):
            continue
        words = set(content_words(q.text))
        if len(words) < 2 or _SOCIAL_Q_RE.search(q.text):
            continue
        need = 1 if len(words) <= 3 else 2
        answered = False
        for later in items[q.index + 1 :]:
            if later.message.speaker == q.message.speaker:
                continue
            if _NO_ANSWER_RE.search(later.text):
                continue
            if len(words & set(content_words(later.text))) >= need:
                answered = True
                break
        if not answered:
            out.append(q)
    return out


def episode_proposal(
    transcript: Transcript, items: list[Sentence], decisions: list[Proposal]
) -> Proposal | None:
    top = salient(items)
    if not top:
        return None
    messages = transcript.messages
    conv = transcript.conversation
    participants = transcript.participants
    times = [m.created_at for m in messages if m.created_at is not None]
    start = min(times) if times else conv.started_at
    end = max(times) if times else None
    head = conv.title or f"Conversation between {', '.join(participants)}"
    # each sentence ends as one, so that nothing reads on into the next speaker's; its
    # relative dates resolved by the day its own message was said ("yesterday" in a message
    # of 3 November is 2 November, whatever the last message's day)
    body = " ".join(
        f"{s.message.speaker}: {annotate(_ended(s.text), s.message.created_at)}" for s in top
    )
    questions = [_item(q.text) for q in open_questions(items)][:10]
    sources = list(dict.fromkeys(s.message.id for s in top))
    return Proposal(
        layer="episode",
        content=f"{head}. {body}",
        category="episode",
        kind="episode",
        importance=min(0.9, 0.4 + 0.05 * len(decisions) + 0.02 * len(top)),
        confidence=0.7,
        source_message_ids=sources,
        episode=EpisodeDetails(
            period_start=start,
            period_end=end if (start is None or end is None or end >= start) else None,
            participants=participants,
            conversation_id=conv.id,
            key_decisions=[_item(d.content) for d in decisions][:20],
            open_questions=questions,
        ),
    )


def _ended(text: str) -> str:
    return text if text[-1:] in ".!?:;" else f"{text}."


def _item(text: str) -> str:
    """One decision or question as an episode keeps it: at most MAX_NAME_CHARS characters."""
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1].rstrip() + "…"
