"""The periods a question names, resolved against the moment it is asked (issue 41.5)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memvault.retrieval.temporal import (
    TimeRange,
    event_cue,
    named_period,
    query_time_range,
    stated_period,
    tells_of,
    with_event_date,
    with_year,
    without_period,
)

# A Thursday evening.
ASKED = datetime(2026, 5, 14, 20, 0, tzinfo=UTC)
OPEN = datetime.min.replace(tzinfo=UTC)
AHEAD = datetime.max.replace(tzinfo=UTC)


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        # With a year: as said, whatever the moment of asking.
        ("What happened in April 2026?", _day(2026, 4, 1), _day(2026, 5, 1)),
        ("What did I buy in 2025?", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("plans in early 2025", _day(2025, 1, 1), _day(2025, 5, 2)),
        ("the summer of 2024", _day(2024, 6, 1), _day(2024, 9, 1)),
        ("the winter of 2025", _day(2025, 12, 1), _day(2026, 3, 1)),
        ("What did I do on June 14, 2025?", _day(2025, 6, 14), _day(2025, 6, 15)),
        ("on 3 June, 2023", _day(2023, 6, 3), _day(2023, 6, 4)),
        ("shared on December 1,2023", _day(2023, 12, 1), _day(2023, 12, 2)),
        ("at Christmas 2024", _day(2024, 12, 24), _day(2024, 12, 27)),
        ("between August 11 and August 15 2023", _day(2023, 8, 11), _day(2023, 8, 16)),
        ("between August and November 2023", _day(2023, 8, 1), _day(2023, 12, 1)),
        # Counted from a date ("the week before", "the Sunday before", "two weeks before"),
        # and that day itself, when what happened the week before is often told.
        ("the week before August 3, 2023", _day(2023, 7, 27), _day(2023, 8, 4)),
        ("on the Sunday before October 25, 2022", _day(2022, 10, 23), _day(2022, 10, 26)),
        ("the weekend before 4th October, 2023", _day(2023, 9, 30), _day(2023, 10, 5)),
        (
            "two weeks before August 11, 2023",  # about then, as "two weeks ago" is
            datetime(2023, 7, 24, 12, tzinfo=UTC),
            _day(2023, 8, 12),
        ),
        ("the Saturday after October 28, 2023", _day(2023, 10, 28), _day(2023, 11, 5)),
        # One side only.
        ("before June 14, 2026", OPEN, _day(2026, 6, 14)),
        ("after 2026-03-03", _day(2026, 3, 4), AHEAD),
        ("since May 2023", _day(2023, 5, 1), AHEAD),
        # Without a year: the most recent one not after the moment of asking.
        ("What did I plant in March?", _day(2026, 3, 1), _day(2026, 4, 1)),
        ("in May", _day(2026, 5, 1), _day(2026, 6, 1)),  # the month we are in
        ("Ana's news in June", _day(2025, 6, 1), _day(2025, 7, 1)),
        ("last May", _day(2025, 5, 1), _day(2025, 6, 1)),  # not this one: it is not over
        ("on March 3", _day(2026, 3, 3), _day(2026, 3, 4)),
        ("last summer", _day(2025, 6, 1), _day(2025, 9, 1)),
        ("in the spring", _day(2026, 3, 1), _day(2026, 6, 1)),
        ("last winter", _day(2025, 12, 1), _day(2026, 3, 1)),
        ("in the autumn", _day(2025, 9, 1), _day(2025, 12, 1)),
        ("What did I bake at Easter?", _day(2026, 4, 3), _day(2026, 4, 7)),
        ("last Christmas", _day(2025, 12, 24), _day(2025, 12, 27)),
        ("on New Year's Eve", _day(2025, 12, 31), _day(2026, 1, 2)),
        # Counted back from the day of asking.
        ("What did I do on Monday?", _day(2026, 5, 11), _day(2026, 5, 12)),
        ("last Thursday", _day(2026, 5, 7), _day(2026, 5, 8)),  # not today
        ("this Tuesday", _day(2026, 5, 12), _day(2026, 5, 13)),
        ("last weekend", _day(2026, 5, 9), _day(2026, 5, 11)),
        ("last week", _day(2026, 5, 1), _day(2026, 5, 11)),
        ("earlier this week", _day(2026, 5, 11), _day(2026, 5, 15)),
        ("last month", _day(2026, 4, 1), _day(2026, 5, 1)),
        ("this month", _day(2026, 5, 1), _day(2026, 5, 15)),
        ("this year", _day(2026, 1, 1), _day(2026, 5, 15)),
        ("last year", _day(2025, 1, 1), _day(2026, 1, 1)),
        ("earlier today", _day(2026, 5, 14), _day(2026, 5, 15)),
        ("this morning", _day(2026, 5, 14), _day(2026, 5, 15)),
        (
            "last night",
            datetime(2026, 5, 13, 12, tzinfo=UTC),
            datetime(2026, 5, 14, 12, tzinfo=UTC),
        ),
        ("three days ago", _day(2026, 5, 10), _day(2026, 5, 13)),
    ],
)
def test_named_periods(query: str, start: datetime, end: datetime) -> None:
    found = query_time_range(query, ASKED)
    assert found is not None, query
    assert (found.start, found.end) == (start, end)


def test_a_month_with_a_year_is_that_year_only() -> None:
    april = query_time_range("What happened in April 2026?", datetime(2027, 5, 1, tzinfo=UTC))
    assert april is not None
    assert not april.contains(datetime(2027, 4, 10, tzinfo=UTC))
    assert april.contains(datetime(2026, 4, 10, tzinfo=UTC))


def test_in_april_moves_with_the_moment_of_asking() -> None:
    # Asked in March, "in April" is last year's; asked in May, this year's.
    march = query_time_range("in April", datetime(2026, 3, 20, tzinfo=UTC))
    may = query_time_range("in April", datetime(2026, 5, 2, tzinfo=UTC))
    assert march is not None and march.start == _day(2025, 4, 1)
    assert may is not None and may.start == _day(2026, 4, 1)


def test_last_summer_asked_in_september_is_the_summer_just_over() -> None:
    found = query_time_range("last summer", datetime(2026, 9, 10, tzinfo=UTC))
    assert found is not None and found.start == _day(2026, 6, 1)


@pytest.mark.parametrize(
    "query",
    [
        "I may go to the gym",  # the verb, not the month
        "Did I march in the parade?",
        "What do I do on Mondays?",  # a habit, not a day
        "How many days ago did I attend the Maundy Thursday service?",  # a named day
        "What should I cook this weekend?",  # still to come (asked on a Thursday)
        "next Monday",
        "before Christmas",  # one side of a holiday without a year: no window
        "airlines I flew with before today",
        "Where is the office?",
    ],
)
def test_phrases_that_name_no_period(query: str) -> None:
    assert named_period(query, ASKED) is None


def test_the_phrase_is_named() -> None:
    found = named_period("What happened in April 2026?", ASKED)
    assert found is not None and found.phrase == "in April 2026"


def test_period_words_are_left_out_of_the_text_to_match_but_months_and_years() -> None:
    # The lexical index holds each memory's month and year of creation: those stay.
    assert without_period("what happened in May 2023") == "what happened in May 2023"
    assert without_period("What did I plant in March?") == "What did I plant in March?"
    assert without_period("What presents did I get last Christmas?") == "What presents did I get ?"
    assert without_period("What did I do in the summer of 2024?") == "What did I do 2024 ?"
    assert without_period("Who did I meet for coffee on Friday?") == "Who did I meet for coffee ?"
    assert without_period("Which restaurant did we try before 2026-02-02?") == (
        "Which restaurant did we try ?"
    )


@pytest.mark.parametrize(
    ("query", "side", "terms"),
    [
        ("What did we argue about before the wedding?", "before", ("wed",)),
        ("What furniture did I buy after I moved?", "after", ("move",)),
        ("Which restaurant did we try before the baby was born?", "before", ("babi", "born")),
        ("What have I added since I started collecting again?", "after", None),
        ("Which gift before my best friend's party did I order?", "before", None),
    ],
)
def test_periods_relative_to_an_event(query: str, side: str, terms: tuple[str, ...] | None) -> None:
    cue = event_cue(query)
    assert cue is not None and cue.side == side
    assert "did" not in cue.event.split()
    if terms is not None:
        assert cue.terms == terms


@pytest.mark.parametrize(
    "query",
    [
        "What did I do after work?",  # routine, not an event a memory dates
        "What did I buy before Christmas?",  # a time
        "What happened after the summer?",
        "What did I do before today?",
        "Where is the office?",
        # A measure between two events: its answer lies on both sides.
        "How many days before my best friend's party did I order her gift?",
        "How much more did I pay after the initial quote?",
    ],
)
def test_phrases_that_name_no_event(query: str) -> None:
    assert event_cue(query) is None


def test_a_memory_dates_its_event_by_what_it_states_else_by_when_it_was_stored() -> None:
    stored = datetime(2026, 1, 10, 9, tzinfo=UTC)
    # A date still ahead of the memory counts: the wedding was announced in January.
    wedding = stated_period("Our wedding is on June 14, 2026, at the vineyard.", stored)
    assert wedding.stated and wedding.range.start == _day(2026, 6, 14)
    crash = stated_period("Had a car accident yesterday, nobody hurt.", stored)
    assert crash.stated and crash.range.start == _day(2026, 1, 9)
    plain = stated_period("We moved to Lisbon.", stored)
    assert not plain.stated and plain.range.start == _day(2026, 1, 10)


def test_an_event_is_named_by_its_date_for_ranking() -> None:
    told = datetime(2026, 1, 10, 9, tzinfo=UTC)
    wedding = TimeRange(_day(2026, 6, 14), _day(2026, 6, 15))
    query = "What did we argue about before the wedding?"
    cue = event_cue(query)
    assert cue is not None
    # The event's day belongs to the period, and so does the day the report was stored.
    assert with_event_date(query, cue, wedding, told, exact=True) == (
        "What did we argue about until 2026-06-14?"
    )
    moved = "What did I buy after I moved?"
    cue = event_cue(moved)
    assert cue is not None
    march = TimeRange(_day(2026, 3, 3), _day(2026, 3, 4))
    assert with_event_date(moved, cue, march, told, exact=False) == (
        "What did I buy since 2026-01-10?"
    )
    # Under a count, only a date said with its year: a narrow window around a guess misses.
    day_before = "What did I eat the day before the wedding?"
    cue = event_cue(day_before)
    assert cue is not None
    dated = with_event_date(day_before, cue, wedding, told, exact=True)
    assert dated == "What did I eat the day before 2026-06-14?"
    assert with_event_date(day_before, cue, wedding, told, exact=False) is None


def test_a_month_without_a_year_can_be_named_with_an_earlier_year() -> None:
    query = "Which spot did Joanna visit in May?"
    named = named_period(query, ASKED)
    earlier = named_period(query, datetime(2023, 6, 1, tzinfo=UTC))
    assert named is not None and earlier is not None
    assert with_year(query, named, earlier) == "Which spot did Joanna visit in May 2023?"
    winter = "Where was I last winter?"
    named = named_period(winter, ASKED)
    earlier = named_period(winter, datetime(2023, 6, 1, tzinfo=UTC))
    assert named is not None and earlier is not None
    said = with_year(winter, named, earlier)
    assert said is not None
    assert query_time_range(said, ASKED) == earlier.range


def test_a_memory_tells_of_a_period_by_the_time_it_names() -> None:
    april = TimeRange(_day(2026, 4, 1), _day(2026, 5, 1))
    told = datetime(2026, 4, 7, tzinfo=UTC)
    assert tells_of("I watched it on Sunday", told, april)
    assert not tells_of("Booked the hotel for April 2027.", told, april)
    assert not tells_of("Come back in six months.", told, april)
    assert not tells_of("I watched it yesterday", datetime(2026, 6, 1, tzinfo=UTC), april)
