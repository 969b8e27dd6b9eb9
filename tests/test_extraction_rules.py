"""The LLM-free extractor on hand-written conversations: facts, episodes, procedures."""

from __future__ import annotations

from datetime import UTC, datetime

from engram.extraction import Conversation, Message, Proposal, RuleExtractor, Speaker, Transcript
from engram.extraction.person import to_third_person
from engram.models import Layer


def transcript(*turns: tuple[str, str] | tuple[str, str, str]) -> Transcript:
    conv = Conversation(id="c1", environment_id="env", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    messages = [
        Message(
            id=f"m{i}",
            conversation_id="c1",
            position=i,
            role=Speaker(t[0]),
            content=t[1],
            author=t[2] if len(t) > 2 else None,
        )
        for i, t in enumerate(turns, start=1)
    ]
    return Transcript(conversation=conv, messages=messages)


def user_facts(*said: str) -> list[str]:
    """The facts proposed from one user's messages, in order."""
    t = transcript(*(("user", text) for text in said))
    return [p.content for p in RuleExtractor(episodes=False).extract(t)]


def by_kind(proposals: list[Proposal], kind: str) -> list[Proposal]:
    return [p for p in proposals if p.kind == kind]


def test_first_person_statements_become_third_person_facts() -> None:
    t = transcript(
        ("user", "I prefer tabs over spaces. I'm allergic to peanuts.", "Caroline"),
        ("assistant", "Noted! I love helping with that."),
        ("user", "My sister lives in Lisbon. I work as a nurse at the city hospital.", "Caroline"),
        ("user", "I've been running every morning. I'm going to apply to grad school.", "Caroline"),
        ("user", "I moved to Berlin last spring.", "Caroline"),
    )
    props = RuleExtractor().extract(t)
    facts = {p.content: p for p in props if p.layer is Layer.FACT}
    assert facts["Caroline prefers tabs over spaces."].category == "preference"
    allergy = facts["Caroline is allergic to peanuts."]
    assert (allergy.category, allergy.kind) == ("constraint", "allergy")
    assert allergy.importance >= 0.9 and allergy.source_message_ids == ["m1"]
    assert facts["Caroline's sister lives in Lisbon."].category == "relationship"
    assert facts["Caroline works as a nurse at the city hospital."].category == "identity"
    assert facts["Caroline has been running every morning."].category == "habit"
    assert facts["Caroline is going to apply to grad school."].category == "plan"
    assert facts["Caroline moved to Berlin last spring."].category == "identity"
    # the assistant's "I love helping" is not a fact about anyone
    assert not any("helping" in c for c in facts)
    assert all(p.subject == "Caroline" for p in facts.values())


def test_decisions_name_who_decided_and_join_the_episode() -> None:
    t = transcript(
        ("user", "Should we use Redis or Memcached for the session cache?"),
        ("assistant", "Redis gives you persistence and richer data structures for sessions."),
        ("user", "Great, we decided to use Redis for the session cache."),
    )
    props = RuleExtractor().extract(t)
    [decision] = by_kind(props, "decision")
    assert decision.content == "The user and others decided to use Redis for the session cache."
    assert decision.category == "decision"
    [episode] = [p for p in props if p.layer is Layer.EPISODE]
    assert episode.episode is not None
    assert episode.episode.key_decisions == [decision.content]
    assert episode.episode.conversation_id == "c1"
    assert episode.episode.participants == ["user", "assistant"]


def test_episode_summary_and_open_questions() -> None:
    t = transcript(
        ("user", "We are migrating the billing service from Flask to FastAPI this quarter."),
        ("assistant", "The billing migration to FastAPI should start with the invoice endpoints."),
        ("user", "The invoice endpoints of the billing service carry most of the traffic."),
        ("user", "How should we handle the legacy webhook signatures?"),
        ("assistant", "Start with the invoice endpoints; they are the simplest to port."),
        ("user", "Thanks, that's all for today."),
    )
    [episode] = [p for p in RuleExtractor().extract(t) if p.layer is Layer.EPISODE]
    assert "billing" in episode.content and "invoice" in episode.content
    assert episode.episode is not None
    assert episode.episode.open_questions == ["How should we handle the legacy webhook signatures?"]
    assert len(episode.source_message_ids) >= 1


def test_answered_questions_are_not_open() -> None:
    t = transcript(
        ("user", "Which database does the analytics pipeline use?"),
        ("assistant", "The analytics pipeline writes to ClickHouse."),
    )
    [episode] = [p for p in RuleExtractor().extract(t) if p.layer is Layer.EPISODE]
    assert episode.episode is not None and episode.episode.open_questions == []


def test_step_lists_and_rules_become_procedures() -> None:
    t = transcript(
        ("user", "How do I release?"),
        (
            "assistant",
            "To cut a release:\n1. Bump the version in pyproject.toml\n2. Tag the commit\n"
            "3. Push the tag to origin",
        ),
        ("user", "Always run the migrations before deploying. Never push to main on Fridays."),
        ("user", "Before merging a PR, run the full test suite."),
    )
    props = RuleExtractor().extract(t)
    [steps] = by_kind(props, "steps")
    assert steps.layer is Layer.PROCEDURE and steps.procedure is not None
    assert steps.procedure.name == "cut a release"
    assert steps.procedure.steps == [
        "Bump the version in pyproject.toml",
        "Tag the commit",
        "Push the tag to origin",
    ]
    rules = {p.content: p for p in by_kind(props, "rule")}
    assert set(rules) == {
        "Always run the migrations before deploying.",
        "Never push to main on Fridays.",
        "Before merging a PR, run the full test suite.",
    }
    before = rules["Before merging a PR, run the full test suite."].procedure
    assert before is not None
    assert (before.trigger, before.steps) == ("Before merging a PR", ["run the full test suite"])


def test_small_talk_and_questions_propose_nothing() -> None:
    t = transcript(("user", "Hi there!"), ("user", "Do I like coffee?"), ("user", "Thanks!"))
    assert [p for p in RuleExtractor().extract(t) if p.layer is not Layer.EPISODE] == []


def test_hedged_statements_get_lower_confidence() -> None:
    t = transcript(("user", "I think I prefer dark roast coffee."), ("user", "I prefer green tea."))
    props = [p for p in RuleExtractor().extract(t) if p.layer is Layer.FACT]
    conf = {p.content: p.confidence for p in props}
    assert (
        conf["The user prefers green tea."]
        > conf["The user thinks the user prefers dark roast coffee."]
    )


def test_proposals_convert_to_new_memories() -> None:
    t = transcript(("user", "I prefer pnpm over npm for JavaScript projects."))
    [fact] = [p for p in RuleExtractor().extract(t) if p.layer is Layer.FACT]
    new = fact.to_new_memory("c1")
    assert new.source == "extracted" and new.category == "preference"
    assert new.metadata["conversation_id"] == "c1"
    assert new.metadata["source_message_ids"] == ["m1"]


def test_third_person_rewrite() -> None:
    assert (
        to_third_person("I watch movies with my kids.", "Mel")
        == "Mel watches movies with their kids."
    )
    assert to_third_person("I don't eat meat.", "Mel") == "Mel doesn't eat meat."
    assert to_third_person("I'm from Sweden.", "Mel") == "Mel is from Sweden."
    assert to_third_person("I went home.", "Mel") == "Mel went home."
    # a subject of two people keeps the plural verb; a second clause still conjugates
    assert to_third_person("My wife and I use Linux.", "Mel") == "Mel's wife and Mel use Linux."
    assert to_third_person("I like tea and I drink it daily.", "Mel") == (
        "Mel likes tea and Mel drinks it daily."
    )
    assert to_third_person("We use Go and I like it.", "Mel") == "We use Go and Mel likes it."
    # an adverb between the subject and the verb (walkthrough 34: "Bob nows use bun")
    assert to_third_person("I now use bun.", "Bob") == "Bob now uses bun."
    assert to_third_person("I currently live in Porto.", "Bob") == "Bob currently lives in Porto."


def test_short_statements_and_what_a_user_works_with_become_facts() -> None:
    said = (
        "I prefer pnpm",
        "I use pnpm for JavaScript.",
        "I switched to uv last month.",
        "Our CI runs on GitHub Actions.",
        "I love it",  # one content word: nothing to remember
        # a change with its old value (walkthrough 34: no fact, so the old one stayed)
        "I switched from VS Code to Neovim.",
        "I migrated from Heroku to Fly.io this spring.",
    )
    assert user_facts(*said) == [
        "The user prefers pnpm",
        "The user uses pnpm for JavaScript.",
        "The user switched to uv last month.",
        "The user's CI runs on GitHub Actions.",
        "The user switched from VS Code to Neovim.",
        "The user migrated from Heroku to Fly.io this spring.",
    ]


def test_a_sentence_bundling_claims_about_different_things_gives_one_fact_each() -> None:
    said = (
        "We deploy on Fridays and I prefer dark mode, and my editor is Neovim.",
        "We use Postgres for everything and our tests run with pytest.",
    )
    assert user_facts(*said) == [
        "The user and others deploy on Fridays.",
        "The user prefers dark mode.",
        "The user's editor is Neovim.",
        "The user and others use Postgres for everything.",
        "The user's tests run with pytest.",
    ]


def test_we_means_the_other_people_never_the_assistant() -> None:
    """A user's "we deploy on Fridays" is their team's habit: it was written "Pat and the
    assistant deploy on Fridays." whenever the assistant had spoken."""
    with_assistant = transcript(
        ("user", "We deploy on Fridays.", "Pat"),
        ("assistant", "I prefer tabs and I live in Paris."),
    )
    facts = [p.content for p in RuleExtractor(episodes=False).extract(with_assistant)]
    assert facts == ["Pat and others deploy on Fridays."]
    people = transcript(
        ("user", "We deploy on Fridays.", "Pat"),
        ("user", "Sounds right.", "Sam"),
        ("assistant", "Noted."),
    )
    facts = [p.content for p in RuleExtractor(episodes=False).extract(people)]
    assert facts == ["Pat and Sam deploy on Fridays."]


def test_a_short_claim_split_from_a_sentence_is_a_fact_of_its_own() -> None:
    """ "I'm vegetarian" is two words, below a sentence's minimum, so the sentence stayed one
    bundled fact and a later move could not replace the home alone."""
    assert user_facts("I'm vegetarian and I live in Oslo.") == [
        "The user is vegetarian.",
        "The user lives in Oslo.",
    ]


def test_a_speaker_introducing_themselves_is_not_restated_and_fillers_go() -> None:
    """Said by Carol (the message's author), "I'm Carol, I work at Acme" became "Carol is
    Carol, Carol works at Acme", "my name is Carol" "Carol's name is Carol", and openers like
    "by the way" stayed in the fact. A name that says more ("Carol Smith") is kept."""
    said = [
        "I'm Carol, I work at Acme as a data engineer.",
        "Actually, my name is Carol and I live in Leeds.",
        "I'm Carol and I'm allergic to nuts.",
        "Hi, I'm Carol.",
        "By the way, I prefer tea over coffee.",
        "So basically I moved to Berlin last year.",
        "I'm Carol Smith and I live in York.",
    ]
    t = transcript(*(("user", text, "Carol") for text in said))
    facts = [p.content for p in RuleExtractor(episodes=False).extract(t)]
    assert facts == [
        "Carol works at Acme as a data engineer.",
        "Carol lives in Leeds.",
        "Carol is allergic to nuts.",
        "Carol prefers tea over coffee.",
        "Carol moved to Berlin last year.",
        "Carol is Carol Smith and Carol lives in York.",
    ]
    # without a known name, the introduction is the news
    assert user_facts("I'm Carol, I work at Acme as a data engineer.") == [
        "The user is Carol, the user works at Acme as a data engineer."
    ]
