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

__all__ = ["TimeRange", "asks_when", "mentions_time", "query_time_range"]

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


def query_time_range(query: str, now: datetime) -> TimeRange | None:
    """The period a query names ("in May 2023", "in 2022", "last week"), or None.

    Relative expressions resolve against ``now``; explicit months and years are taken as UTC.
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
    lowered = query.lower()
    for phrase, (back, until) in _RELATIVE.items():
        if re.search(rf"\b{phrase}\b", lowered):
            day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
            return TimeRange(day - timedelta(days=back), day - timedelta(days=until - 1))
    return None
