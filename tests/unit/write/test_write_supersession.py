"""Contradiction detection: statement extraction, conflicts, and the conservative defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memvault.models import MemoryCategory, MemoryEntry
from memvault.write.supersession import (
    conflicts,
    contradiction_query,
    detect_contradiction,
    different_topic,
    extract_statement,
    find_contradiction,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def entry(
    i: str,
    content: str,
    *,
    created: datetime = NOW,
    agent: str = "dev-1",
    category: MemoryCategory = MemoryCategory.SEMANTIC,
    **extra: object,
) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id=agent,
        category=category,
        content=content,
        created_at=created,
        updated_at=created,
        **extra,
    )


@pytest.mark.parametrize(
    ("text", "subject", "slot", "value"),
    [
        ("Prefers dark mode", "user", "preference:mode", "dark mode"),
        ("Now prefers light mode.", "user", "preference:mode", "light mode"),
        ("The user prefers dark mode", "user", "preference:mode", "dark mode"),
        ("I prefer tabs over spaces for indentation", "user", "preference:indentation", "tabs"),
        ("Prefers Litestar over Flask", "user", "preference:flask|litestar", "litestar"),
        ("prefers to work remotely", "user", "preference:to work", "remotely"),
        ("prefers Python 3.12", "user", "preference:python", "python 3.12"),
        ("Uses vim for editing", "user", "uses:editing", "vim"),
        ("We use Postgres for storage", "we", "uses:storage", "postgres"),
        ("Alice lives in Paris", "alice", "residence", "paris"),
        ("Alice moved to Berlin", "alice", "residence", "berlin"),
        ("I've moved to Lisbon", "user", "residence", "lisbon"),
        ("FYI alice LIVES in paris!!", "alice", "residence", "paris"),
        ("Bob works at Acme Bank", "bob", "employer", "acme bank"),
        ("Bob works as a designer", "bob", "role", "designer"),
        ("Alice's favourite colour is blue", "alice", "favorite color", "blue"),
        ("My favorite color is green", "user", "favorite color", "green"),
        ("The budget is now 600", "user", "budget", "600"),
        ("Budget: 1,000", "user", "budget", "1000"),
        ("Timezone: UTC+1", "user", "timezone", "utc +1"),
        ("max_retries = 5", "user", "max retries", "5"),
        ("Project Atlas's deadline is March 3", "project atlas", "deadline", "march 3"),
        ("Project Atlas is on hold", "project atlas", "status", "on hold"),
        ("Alice is married", "alice", "relationship", "married"),
        ("Update: Alice now works at Globex", "alice", "employer", "globex"),
        (
            "Dmitri, now prefers a aisle seat on flights",
            "dmitri",
            "preference:flights",
            "aisle seat on flights",
        ),
    ],
)
def test_extract_statement(text: str, subject: str, slot: str, value: str) -> None:
    statement = extract_statement(text)
    assert statement is not None, text
    assert (statement.subject, statement.slot, statement.value) == (subject, slot, value)


def test_switch_statements_record_what_they_replace() -> None:
    s = extract_statement("I switched from vim to neovim")
    assert s is not None
    assert (s.subject, s.value, s.replaces) == ("user", "neovim", frozenset({"vim"}))
    moved = extract_statement("Alice moved from Paris to Berlin")
    assert moved is not None
    assert (moved.slot, moved.value, moved.replaces) == (
        "residence",
        "berlin",
        frozenset({"paris"}),
    )


@pytest.mark.parametrize(
    "text",
    [
        "He lives in Rome",  # pronoun: whose residence?
        "Alice doesn't live in Paris",  # negation
        "Maybe prefers dark mode",  # hedge
        "Alice used to live in Paris",  # past habit
        "Does Alice live in Paris?",  # question
        "Alice lives in a small apartment",  # a description, not a place name
        "Bob works at home",
        "Caroline: thanks",  # a speaker label is not a slot
        "The meeting is at 3pm",  # "meeting" is not a known single-valued slot
        "Note: the meeting is boring",
        "Alice lives in Paris and works at Acme",  # two statements in one
        "prefers tea and coffee",  # two values
        "Bob is tired",  # not a closed status vocabulary
        "Alice likes jazz",  # liking is not exclusive
        "Went for a run along the river",
        "",
    ],
)
def test_unsure_texts_yield_no_statement(text: str) -> None:
    assert extract_statement(text) is None


def test_conflicts() -> None:
    def st(text: str):  # type: ignore[no-untyped-def]
        s = extract_statement(text)
        assert s is not None, text
        return s

    assert conflicts(st("Now prefers light mode"), st("Prefers dark mode"))
    assert not conflicts(st("Prefers dark mode"), st("prefers DARK mode"))
    assert not conflicts(st("Prefers dark mode"), st("Prefers drak mode"))  # a typo, not a change
    assert not conflicts(st("Bob prefers light mode"), st("Prefers dark mode"))  # other subject
    assert conflicts(st("The budget is 600"), st("Budget: 500"))
    assert conflicts(st("I switched from vim to neovim"), st("Uses vim for editing"))
    assert conflicts(st("prefers Flask"), st("Prefers Litestar over Flask"))
    assert conflicts(st("Prefers Flask over Litestar"), st("Prefers Litestar over Flask"))
    assert conflicts(
        st("Now prefers spaces for indentation"), st("Switched from spaces to tabs for indentation")
    )
    assert not conflicts(
        st("Alice moved from Paris to Berlin"), st("prefers Paris")
    )  # other family
    assert not conflicts(st("Uses Redis for caching"), st("Prefers Memcached for caching"))


def test_different_topic_forgives_typos() -> None:
    a = extract_statement("Erin lives in Boston")
    assert a is not None
    assert not different_topic(a, extract_statement("ERI LIVES IN BOSTON"))
    assert different_topic(a, extract_statement("Bob lives in Boston"))
    assert not different_topic(a, None)


def test_dark_mode_then_light_mode_is_superseded() -> None:
    old = entry("m1", "Prefers dark mode", created=NOW - timedelta(days=3))
    assert detect_contradiction("Now prefers light mode", [old], now=NOW) == old


def test_numbers_change_is_a_contradiction() -> None:
    old = entry("m1", "The budget is 500")
    assert detect_contradiction("The budget is 600", [old]) == old
    assert detect_contradiction("the budget is 500", [old]) is None


def test_unrelated_statements_do_not_supersede() -> None:
    candidates = [
        entry("m1", "Prefers dark mode"),
        entry("m2", "Alice lives in Paris"),
        entry("m3", "Uses vim for editing"),
        entry("m4", "The budget is 500"),
    ]
    for text in (
        "Prefers tabs for indentation",
        "Bob lives in Berlin",
        "Uses ruff for linting",
        "The deadline is March 3",
        "Prefers dark chocolate",
        "Had a call with Alice about Paris",
    ):
        assert detect_contradiction(text, candidates) is None, text


def test_most_recent_live_candidate_is_returned() -> None:
    older = entry("m1", "Alice lives in Paris", created=NOW - timedelta(days=30))
    newer = entry("m2", "Alice moved to Rome", created=NOW - timedelta(days=2))
    dead = entry("m3", "Alice lives in Oslo", created=NOW - timedelta(days=1), superseded_by="m2")
    closed = entry("m4", "Alice lives in Riga", created=NOW, valid_to=NOW - timedelta(hours=1))
    found = find_contradiction("Alice lives in Berlin", [older, newer, dead, closed], now=NOW)
    assert found is not None
    assert found.entry == newer
    assert (found.old.value, found.new.value) == ("rome", "berlin")


def test_agent_and_category_filters() -> None:
    other = entry("m1", "Prefers dark mode", agent="dev-2")
    social = entry("m2", "Prefers dark mode", category=MemoryCategory.SOCIAL)
    found = detect_contradiction(
        "Now prefers light mode",
        [other, social],
        agent_id="dev-1",
        category=MemoryCategory.SEMANTIC,
    )
    assert found is None


def test_contradiction_query() -> None:
    assert contradiction_query("Update: Lucia lives in Porto now") == "lucia"
    assert contradiction_query("Prefers dark mode") == "mode"
    assert contradiction_query("The atlas budget is 500") == "atlas budget"
    assert contradiction_query("Went for a run") is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Alice lives in Paris", "Alice likes Paris"),
        ("The deadline is Friday", "The deadline for the report is Monday"),
        ("My favorite color is blue", "My favorite food is pizza"),
        ("Prefers dark mode", "Prefers dark mode in the terminal"),
        ("Uses PostgreSQL 15", "Uses PostgreSQL for analytics"),
        ("Alice works at Google", "Alice's husband works at Meta"),
        ("The user prefers Python for scripting", "The user prefers Go for backend services"),
        ("Prefers short answers", "Prefers short variable names"),
        ("Timezone: CET", "Meeting timezone: UTC"),
        ("Caroline: I moved to Boston last year", "Caroline: I moved to Denver"),
        ("I prefer tea", "Alice prefers coffee"),
        ("Prefers dark mode", "He prefers light mode"),
        ("Lives in Paris", "Might move to Berlin"),
        ("Alice lives in Paris", "Alice's sister lives in Rome"),
        ("The budget is 500", "The budget is not 500"),
        ("Uses vim", "Uses emacs"),  # people use several tools
    ],
)
def test_look_alike_pairs_do_not_supersede(old: str, new: str) -> None:
    assert detect_contradiction(new, [entry("m1", old)]) is None
