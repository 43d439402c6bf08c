"""Temporal cues in queries and memories (pure functions, English).

Two uses in ranking: a query that asks *when* something happened prefers memories that say when
(``yesterday``, ``last week``, ``in May``, ``2023``); and a query that names a time ("in May
2023", "last week", "yesterday") prefers memories created in that period.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memvault.retrieval._textcache import text_memo
from memvault.retrieval.text import words

__all__ = [
    "TimeRange",
    "asks_when",
    "mentions_time",
    "query_time_range",
    "without_relative_time",
]

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTH_RE = "|".join(
    sorted((m for m in _MONTHS if len(m) > 3 or m == "may"), key=len, reverse=True)
)

_WHEN = re.compile(
    r"^\s*when\b|\bwhen (did|does|do|was|were|is|are|will|has|have|had)\b|\bwhat (time|date|day"
    r"|year|month)\b|\bhow long ago\b|\bwhich (year|month|day|date)\b",
    re.IGNORECASE,
)
# Words that say when something happened (a year too, below). "may" is left out: it is mostly
# the modal verb. Matched against a text's distinct words rather than with one case-insensitive
# regex over the text: ranking asks this of every candidate, and a set lookup per word is several
# times cheaper than trying a 40-way alternation at every position of a long turn.
_TIME_WORDS = frozenset(
    "yesterday today tonight tomorrow ago last next recently lately soon since weekend week "
    "weeks month months year years morning evening night monday tuesday wednesday thursday "
    "friday saturday sunday january february march april june july august september october "
    "november december".split()
)
_YEARS = frozenset(str(year) for year in range(1900, 2100))
_MONTH_YEAR = re.compile(rf"\b(?:in |during )?({_MONTH_RE})\.?,? ((?:19|20)\d\d)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:in|during|of) ((?:19|20)\d\d)\b", re.IGNORECASE)
_RELATIVE = {
    "yesterday": (1, 1),
    "today": (0, 0),
    "last week": (14, 7),
    "this week": (7, 0),
    "last month": (62, 28),
    "this month": (31, 0),
    "last year": (730, 365),
}
# "before today" / "until last week" bound a period on one side only: no window.
_RELATIVE_RE = {
    phrase: re.compile(rf"(?<!before )(?<!until )\b{phrase}\b", re.IGNORECASE)
    for phrase in _RELATIVE
}


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open period ``[start, end)`` in UTC."""

    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        """True if ``moment`` falls in the period."""
        return self.start <= moment < self.end


def asks_when(query: str) -> bool:
    """True if the query asks for a time ("When did ...", "what year ...")."""
    return bool(_WHEN.search(query))


@text_memo()
def mentions_time(text: str) -> bool:
    """True if the text contains a temporal word (a weekday, a month, "yesterday", "last" ...)
    or a year (19xx, 20xx).

    Cached: the same candidate texts recur across searches.
    """
    found = set(words(text))
    return not (_TIME_WORDS.isdisjoint(found) and _YEARS.isdisjoint(found))


_COUNT = (
    r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|a couple of|couple of|a few|few|several"
)
_COUNTS = {
    word: n
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
} | {"a": 1, "an": 1, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 4}
# Vague counts ("a few weeks ago") get twice the tolerance of exact ones.
_VAGUE = frozenset({"a couple of", "couple of", "a few", "few", "several"})
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(rf"\b({_COUNT})\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
# "in the past three months", "during the last month", "over the past few weeks"; not "the
# last day of school".
_PAST = re.compile(
    rf"\bthe (?:past|last)\s+(?:({_COUNT})\s+)?(day|week|month|year)s?\b(?!\s+of\b)",
    re.IGNORECASE,
)


def _count(word: str | None) -> tuple[int, bool]:
    """The number a count word stands for, and whether it is vague ("a few")."""
    if word is None:
        return 1, False
    key = " ".join(word.lower().split())
    return (int(key) if key.isdigit() else _COUNTS[key]), key in _VAGUE


def query_time_range(query: str, now: datetime) -> TimeRange | None:
    """The period a query names ("in May 2023", "in 2022", "last week", "two weeks ago",
    "in the past three months"), or None.

    Relative expressions resolve against ``now`` (the moment the question is asked); explicit
    months and years are taken as UTC. "N units ago" is a window around that day, a quarter of
    the distance wide on each side (at least a day; twice that for vague counts such as "a few"),
    since people round: "two weeks ago" is 10 to 18 days back.
    """
    match = _MONTH_YEAR.search(query)
    if match:
        month = _MONTHS[match.group(1).lower().rstrip(".")]
        year = int(match.group(2))
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
        return TimeRange(start, end)
    match = _YEAR.search(query)
    if match:
        year = int(match.group(1))
        return TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    found = _relative(query)
    if found is None:
        return None
    back, until, _ = found
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return TimeRange(day - timedelta(days=back), day - timedelta(days=until - 1))


def without_relative_time(query: str) -> str:
    """``query`` without the phrase that names a period relative to now ("two weeks ago", "in
    the past three months", "last week"), for lexical matching: once the period selects and
    favours memories by date, its words ("weeks", "three", "past") are not what the memories
    are about, and they match many that are not."""
    found = _relative(query)
    if found is None:
        return query
    start, end = found[2]
    return " ".join(f"{query[:start]} {query[end:]}".split())


def _relative(query: str) -> tuple[float, float, tuple[int, int]] | None:
    """A period relative to today: (days back to its start, days back to its last day, where
    the query names it), or None."""
    match = _AGO.search(query)
    if match:
        n, vague = _count(match.group(1))
        back = n * _UNIT_DAYS[match.group(2).lower()]
        slack = max(1.0, back / 4) * (2 if vague else 1)
        return back + slack, back - slack, match.span()
    match = _PAST.search(query)
    if match:
        return _count(match.group(1))[0] * _UNIT_DAYS[match.group(2).lower()], 0, match.span()
    for phrase, pattern in _RELATIVE_RE.items():
        match = pattern.search(query)
        if match:
            back, until = _RELATIVE[phrase]
            return back, until, match.span()
    return None
