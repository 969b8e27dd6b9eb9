"""A question that names a kind of thing finds the memories naming things of that kind:
"which package manager" finds "Prefers pnpm over npm" (the README's own example), on both
stores, keyword-only and hybrid; a value that is also an everyday word answers only beside its
kind."""

from __future__ import annotations

from engram import LOCAL, Engram, NewMemory
from engram.retrieval.expansion import expand
from engram.retrieval.models import SearchMode
from engram.store.term_budget import rarest_first


def _contents(e: Engram, query: str, mode: SearchMode = SearchMode.HYBRID) -> list[str]:
    found = e.search.search(query, LOCAL, mode=mode, count_access=False)
    return [r.memory.content for r in found.items]


def _add(e: Engram, *texts: str) -> None:
    for text in texts:
        e.memories.add(NewMemory(content=text), LOCAL)
    e.index_pending()


def _seed(e: Engram) -> None:
    _add(
        e,
        "Prefers pnpm over npm",
        "Staging uses PostgreSQL 16 with pgvector",
        "I love reading poetry on Sundays",
        "The cargo ship left the harbour late",
    )


def test_a_question_naming_a_kind_finds_its_values_keyword_only(engram: Engram) -> None:
    _seed(engram)
    for query in ("which package manager", "which package manager for javascript"):
        found = _contents(engram, query, SearchMode.KEYWORD)
        # the poetry note and the cargo ship share a value's word, not its kind
        assert found == ["Prefers pnpm over npm"], query
    assert _contents(engram, "what database does staging use", SearchMode.KEYWORD)[0] == (
        "Staging uses PostgreSQL 16 with pgvector"
    )


def test_a_question_naming_a_kind_ranks_its_value_first_hybrid(semantic_engram: Engram) -> None:
    _seed(semantic_engram)
    found = _contents(semantic_engram, "which package manager for javascript")
    assert found[0] == "Prefers pnpm over npm"
    assert "I love reading poetry on Sundays" not in found[:1]


def test_the_expansion_covers_the_kind_and_needs_company_for_ambiguous_values() -> None:
    terms = expand("which package manager for javascript")
    assert terms.words == {"package", "manager", "javascript"}
    assert {"pnpm", "npm", "poetry"} <= set(terms.also)
    assert terms.covered({"pnpm"}) == {"package", "manager"}
    assert terms.covered({"poetry"}) == frozenset()  # "I love reading poetry"
    assert terms.covered({"poetry", "pip"}) == {"package", "manager"}
    assert terms.covered({"javascript", "npm"}) == {"package", "manager", "javascript"}
    # a question naming no kind is searched as it is; a noun alone names a kind only as a
    # whole phrase ("package" is not "package manager")
    assert expand("where did the package go").also == ()
    assert expand("what shell do I use").kinds["zsh"] == {"shell"}


def test_kinds_only_search_knows(engram: Engram) -> None:
    _add(
        engram,
        "Migrated the suite to vitest last week",
        "Formatting is done by prettier on save",
        "The weekly sync moved to Thursdays",
    )
    assert _contents(engram, "which test runner", SearchMode.KEYWORD) == [
        "Migrated the suite to vitest last week"
    ]
    assert _contents(engram, "what code formatter", SearchMode.KEYWORD)[0] == (
        "Formatting is done by prettier on save"
    )


def test_a_short_form_finds_its_long_form_and_back(engram: Engram) -> None:
    _add(
        engram,
        "Deploys to production happen on Tuesdays",
        "The prod database is backed up nightly",
        "Staging uses PostgreSQL 16",
    )
    assert set(_contents(engram, "prod deploys", SearchMode.KEYWORD)[:1]) == {
        "Deploys to production happen on Tuesdays"
    }
    assert "The prod database is backed up nightly" in _contents(
        engram, "production backups", SearchMode.KEYWORD
    )
    assert _contents(engram, "which postgres version", SearchMode.KEYWORD) == [
        "Staging uses PostgreSQL 16"
    ]


def test_suggested_words_never_crowd_out_the_questions_own() -> None:
    # a large store bounds a query's postings: the question's own rarest word is kept first,
    # the values of the kind it names only within what budget is left
    docs = {"staging": 2400, "database": 3000, "postgres": 90, "sqlite": 20, "mysql": 5}
    kept = rarest_first(["database", "staging"], docs, 10_000, also=["postgres", "sqlite", "mysql"])
    assert kept == ["staging", "sqlite", "mysql"]
    # searched as one list, the values (rarer) would have taken the budget from "staging"
    assert "staging" not in rarest_first(
        ["database", "staging", "postgres", "sqlite", "mysql"], docs, 10_000
    )
    assert rarest_first(["staging"], docs, 10_000) == ["staging"]
    # with room for everything, everything is kept, the question's words first
    small = dict.fromkeys(docs, 1)
    assert rarest_first(["database", "staging"], small, 10_000, also=["mysql"]) == [
        "database",
        "staging",
        "mysql",
    ]


def test_a_first_person_question_finds_the_answer_in_its_own_words(engram: Engram) -> None:
    """Walkthrough 34 (an app's user asks in their words): "where do I live" found nothing in
    "Jo moved to Seville", nor "do I have any allergies" in "Jo is allergic to peanuts", keyword
    only (the stemmer keeps live/moved and allergies/allergic apart)."""
    _add(engram, "Jo moved to Seville in March", "Jo is allergic to peanuts", "Jo likes jazz")
    assert _contents(engram, "where do I live", SearchMode.KEYWORD)[:1] == [
        "Jo moved to Seville in March"
    ]
    assert _contents(engram, "do I have any allergies", SearchMode.KEYWORD)[:1] == [
        "Jo is allergic to peanuts"
    ]
