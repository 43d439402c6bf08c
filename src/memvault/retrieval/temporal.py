"""Temporal cues in queries and memories (pure functions, English).

Two uses in ranking: a query that asks *when* something happened prefers memories that say when
(``yesterday``, ``last week``, ``in May``, ``2023``); and a query that names a time prefers
memories created in that period (:func:`named_period`).

A period is resolved against the moment the question is asked (``now``): relative ones ("last
week", "two months ago", "yesterday", "on Monday", "this year") count back from it, and absolute
ones without a year ("in April", "last summer", "at Easter") are the most recent such period not
after it. Absolute ones with a year ("in April 2026", "in 2025", "the summer of 2024", "on June
14, 2026") are taken as they are, in UTC. "Before"/"after" an absolute date bounds one side only
("before June 14, 2026": everything until then). A period relative to an event ("before the
wedding", "after I moved") needs the store to date the event: :func:`event_cue` finds the
phrase, :func:`stated_period` dates a memory that reports the event, and the search layer
(``memvault._search``) puts the two together.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from memvault.retrieval._textcache import text_memo
from memvault.retrieval.text import query_terms, words

__all__ = [
    "EventCue",
    "NamedPeriod",
    "StatedPeriod",
    "TimeRange",
    "asks_when",
    "event_cue",
    "mentions_time",
    "named_period",
    "query_time_range",
    "stated_period",
    "tells_of",
    "with_event_date",
    "with_year",
    "without_period",
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

_OPEN_START = datetime.min.replace(tzinfo=UTC)
_OPEN_END = datetime.max.replace(tzinfo=UTC)
_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class TimeRange:
    """A half-open period ``[start, end)`` in UTC; a side left open is ``datetime.min``/``max``."""

    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        """True if ``moment`` falls in the period."""
        return self.start <= moment < self.end

    @property
    def open_start(self) -> bool:
        """True if the period has no lower bound ("before June 2026")."""
        return self.start == _OPEN_START

    @property
    def open_end(self) -> bool:
        """True if the period has no upper bound ("since March 2026")."""
        return self.end == _OPEN_END


@dataclass(frozen=True, slots=True)
class NamedPeriod:
    """The period a query names, and where it names it (``query[span[0]:span[1]]``)."""

    range: TimeRange
    span: tuple[int, int]
    phrase: str
    yearless: bool = False
    """A month, day, season or holiday named without its year ("in May", "last summer"):
    the most recent one; a store may know better (see ``memvault._search.date_query``)."""
    absolute: bool = False
    """Named with its year ("on June 14, 2026", "in April 2026"): the same whenever asked."""


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


# -- calendar helpers -------------------------------------------------------------------------


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _month(year: int, month: int) -> TimeRange:
    start = datetime(year, month, 1, tzinfo=UTC)
    return TimeRange(start, datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC))


def _part(whole: TimeRange, part: str | None) -> TimeRange:
    """The early, middle or late third of ``whole`` (all of it for no part)."""
    if not part:
        return whole
    third = (whole.end - whole.start) / 3
    index = {"early": 0, "mid": 1, "late": 2}[part.lower()]
    start = whole.start + third * index
    return TimeRange(_midnight(start.date()), _midnight((start + third).date()))


def _one_day(day: date) -> TimeRange:
    start = _midnight(day)
    return TimeRange(start, start + _DAY)


def _easter(year: int) -> date:
    """Easter Sunday (Gregorian; the anonymous algorithm)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * ell) // 451
    month, day = divmod(h + ell - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _thanksgiving(year: int) -> date:
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)


_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def _season(name: str, year: int) -> TimeRange:
    """A meteorological season of the northern hemisphere; the winter of ``year`` is the one
    holding its January and February."""
    first = _SEASONS[name.lower()]
    if first == 12:
        return TimeRange(datetime(year - 1, 12, 1, tzinfo=UTC), datetime(year, 3, 1, tzinfo=UTC))
    return TimeRange(datetime(year, first, 1, tzinfo=UTC), datetime(year, first + 3, 1, tzinfo=UTC))


_HOLIDAYS: dict[str, Callable[[int], TimeRange]] = {
    "christmas eve": lambda y: _one_day(date(y, 12, 24)),
    "christmas day": lambda y: _one_day(date(y, 12, 25)),
    # Christmas as people speak of it: from the Eve to Boxing Day.
    "christmas": lambda y: TimeRange(_midnight(date(y, 12, 24)), _midnight(date(y, 12, 27))),
    "new year's eve": lambda y: TimeRange(_midnight(date(y - 1, 12, 31)), _midnight(date(y, 1, 2))),
    "new year's day": lambda y: _one_day(date(y, 1, 1)),
    "new year": lambda y: TimeRange(_midnight(date(y - 1, 12, 31)), _midnight(date(y, 1, 2))),
    # Good Friday to Easter Monday.
    "easter": lambda y: TimeRange(
        _midnight(_easter(y) - 2 * _DAY), _midnight(_easter(y) + 2 * _DAY)
    ),
    "halloween": lambda y: _one_day(date(y, 10, 31)),
    "thanksgiving": lambda y: TimeRange(
        _midnight(_thanksgiving(y)), _midnight(_thanksgiving(y) + 4 * _DAY)
    ),
    "valentine's day": lambda y: _one_day(date(y, 2, 14)),
    "valentine's": lambda y: _one_day(date(y, 2, 14)),
}
_APOSTROPHE = "['\N{RIGHT SINGLE QUOTATION MARK}]"
_HOLIDAY_RE = (
    "|".join(
        name.replace("'", _APOSTROPHE + "?").replace(" ", r"\s+")
        for name in sorted(_HOLIDAYS, key=len, reverse=True)
    )
    + "|xmas"
)


def _holiday(name: str) -> Callable[[int], TimeRange]:
    key = re.sub(_APOSTROPHE + "?", "", " ".join(name.lower().split()))
    key = "christmas" if key == "xmas" else key
    return next(make for holiday, make in _HOLIDAYS.items() if holiday.replace("'", "") == key)


def _recent(make: Callable[[int], TimeRange], now: datetime, *, last: bool) -> TimeRange:
    """The most recent period ``make(year)`` that began by ``now`` (``last``: that ended by
    the end of the day of ``now``: "last summer" asked in July is the summer of a year ago)."""
    end_of_day = _midnight(now.date()) + _DAY
    for year in range(now.year + 1, now.year - 3, -1):
        period = make(year)
        if (period.end <= end_of_day) if last else (period.start <= now):
            return period
    return make(now.year - 1)


# -- the grammar of periods -------------------------------------------------------------------

_YEAR_RE = r"((?:19|20)\d\d)"
_DAYNUM = r"(\d{1,2})(?:st|nd|rd|th)?"
_PART = r"(?:(early|mid|late)[\s-]+)?"
# A bound on one side: "before June 14, 2026" is everything until then.
_SIDE = r"(?:\b(before|after|since|until|till|prior to|by)\s+(?:the\s+)?)?"

_ISO = re.compile(rf"{_SIDE}\b{_YEAR_RE}-(\d\d)-(\d\d)\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(
    rf"{_SIDE}\b(?:on\s+)?({_MONTH_RE})\.?\s+{_DAYNUM}(?:,\s*|\s+){_YEAR_RE}\b", re.IGNORECASE
)
_DAY_MONTH_YEAR = re.compile(
    rf"{_SIDE}\b(?:on\s+)?(?:the\s+)?{_DAYNUM}\s+(?:of\s+)?({_MONTH_RE})\.?,?\s+{_YEAR_RE}\b",
    re.IGNORECASE,
)
# "between August 11 and August 15 2023", "from March to May 2024": the year is said once.
_BETWEEN = re.compile(
    rf"\b(?:between|from)\s+({_MONTH_RE})(?:\s+{_DAYNUM})?\s+(?:and|to|until|till|-)\s+"
    rf"({_MONTH_RE})(?:\s+{_DAYNUM})?(?:,\s*|\s+){_YEAR_RE}\b",
    re.IGNORECASE,
)
_MONTH_YEAR = re.compile(
    rf"{_SIDE}\b(?:(?:in|during|of|throughout)\s+)?{_PART}({_MONTH_RE})\.?,?\s+(?:of\s+)?"
    rf"{_YEAR_RE}\b",
    re.IGNORECASE,
)
_SEASON_YEAR = re.compile(
    rf"{_SIDE}\b(?:(?:in|during|over|throughout)\s+)?(?:the\s+)?{_PART}"
    rf"(spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_YEAR_RE}\b",
    re.IGNORECASE,
)
_HOLIDAY_YEAR = re.compile(
    rf"{_SIDE}\b(?:(?:at|on|over|for|during)\s+)?({_HOLIDAY_RE})\s+(?:of\s+)?{_YEAR_RE}\b",
    re.IGNORECASE,
)
_YEAR = re.compile(
    rf"\b(in|during|of|throughout|back in|before|after|since|until|till|prior to)\s+"
    rf"(?:the\s+(?:year\s+)?)?{_PART}{_YEAR_RE}\b(?!-\d)",
    re.IGNORECASE,
)

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
# "before today" / "until last week" bound a period on one side only: no window.
_NOT_BOUND = r"(?<!before )(?<!until )"


def _monday(day: datetime) -> datetime:
    return day - timedelta(days=day.weekday())


def _weekend(day: datetime, *, last: bool) -> TimeRange:
    """The weekend of ``day`` if it is one (unless ``last``), else the one before it."""
    saturday = day - timedelta(days=(day.weekday() - 5) % 7)
    if last and day.weekday() >= 5:
        saturday -= timedelta(days=7)
    return TimeRange(saturday, saturday + 2 * _DAY)


def _next_weekend(day: datetime) -> TimeRange:
    if day.weekday() >= 5:
        return _weekend(day, last=False)
    saturday = day + timedelta(days=5 - day.weekday())
    return TimeRange(saturday, saturday + 2 * _DAY)


def _jan1(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def _prev_month(day: datetime) -> TimeRange:
    first = day.replace(day=1)
    return TimeRange(_midnight((first - _DAY).replace(day=1).date()), first)


# Fixed phrases relative to the day of the question (midnight UTC), first match wins.
_PHRASES: tuple[tuple[re.Pattern[str], Callable[[datetime], TimeRange]], ...] = tuple(
    (re.compile(rf"{_NOT_BOUND}\b(?:{words_re})\b", re.IGNORECASE), make)
    for words_re, make in (
        ("the day before yesterday", lambda d: TimeRange(d - 2 * _DAY, d - _DAY)),
        ("yesterday", lambda d: TimeRange(d - _DAY, d)),
        # Yesterday evening to this morning.
        ("last night", lambda d: TimeRange(d - _DAY / 2, d + _DAY / 2)),
        (
            "(?:earlier )?today|this (?:morning|afternoon|evening)|tonight|earlier on",
            lambda d: TimeRange(d, d + _DAY),
        ),
        ("the other day", lambda d: TimeRange(d - 5 * _DAY, d)),
        ("last weekend", lambda d: _weekend(d, last=True)),
        ("(?:over|at|on|during) the weekend", lambda d: _weekend(d, last=False)),
        ("this weekend", _next_weekend),
        # "Last week": the week before this one, or seven to thirteen days back, whichever
        # reaches further (people use both).
        ("last week", lambda d: TimeRange(d - 13 * _DAY, _monday(d))),
        ("(?:earlier )?this week", lambda d: TimeRange(_monday(d), d + _DAY)),
        ("last month", _prev_month),
        ("(?:earlier )?this month", lambda d: TimeRange(d.replace(day=1), d + _DAY)),
        ("last year", lambda d: TimeRange(_jan1(d.year - 1), _jan1(d.year))),
        ("(?:earlier )?this year", lambda d: TimeRange(_jan1(d.year), d + _DAY)),
    )
)

_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAY = re.compile(
    rf"\b(?:(last|this|on|past|next|before|after|since|until|till)\s+)?"
    rf"({'|'.join(_WEEKDAYS)})(?!s\b)\b",
    re.IGNORECASE,
)
# A month without a year needs a preposition (or a day) so that "may" the verb, "march" the
# walk and "august" the adjective are left alone.
_MONTH_ALONE = re.compile(
    rf"\b(?:(in|during|of|on|last|this|back in|throughout|before|after|since|until|till|by)"
    rf"\s+)?(?:the\s+)?{_PART}(?:{_DAYNUM}\s+(?:of\s+)?)?({_MONTH_RE})\b(?:\.?\s+{_DAYNUM}\b)?",
    re.IGNORECASE,
)
_SEASON_ALONE = re.compile(
    r"\b(?:(last|this|in|during|over|through|throughout|before|after|since|until|till|next)"
    r"\s+)?(the\s+)?(?:(early|mid|late)[\s-]+)?(spring|summer|autumn|fall|winter)\b"
    r"(?!\s+(?:of\s+)?(?:19|20)\d\d)",
    re.IGNORECASE,
)
_HOLIDAY_ALONE = re.compile(
    rf"\b(?:(last|this|at|on|over|for|during|around|before|after|since|until|till|next)\s+)?"
    rf"({_HOLIDAY_RE})\b",
    re.IGNORECASE,
)
_ONE_SIDED = frozenset({"before", "after", "since", "until", "till", "prior to", "by", "next"})


def _bounded(side: str | None, whole: TimeRange) -> TimeRange:
    """``whole``, or the open period on one side of it that ``side`` names."""
    key = " ".join(side.lower().split()) if side else ""
    if key in ("before", "prior to"):
        return TimeRange(_OPEN_START, whole.start)
    if key in ("until", "till", "by"):
        return TimeRange(_OPEN_START, whole.end)
    if key == "after":
        return TimeRange(whole.end, _OPEN_END)
    if key == "since":
        return TimeRange(whole.start, _OPEN_END)
    return whole


def _day_or_none(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


_Found = tuple[TimeRange, tuple[int, int]]


# What a day's "before"/"after" may count: "the week before", "two days after", "the Sunday
# before", "last weekend before".
_LEAD = re.compile(
    rf"(?<!how many )(?<!how few )\b(the|last|a|an|{_COUNT})\s+"
    rf"(day|week|weekend|month|year|{'|'.join(calendar.day_name)})s?\s+$",
    re.IGNORECASE,
)


def _led(lead: re.Match[str], side: str, day: datetime) -> TimeRange | None:
    """The period ``lead`` ("the week", "two days", "the Sunday") ``side`` ("before",
    "after") of ``day``, or None for a side other than those two."""
    after = side.lower() == "after"
    if not after and side.lower() not in ("before", "prior to"):
        return None
    count, unit = lead.group(1), lead.group(2).lower()
    if unit in _WEEKDAYS:
        wanted = _WEEKDAYS[unit]
        if after:
            found = day + timedelta(days=(wanted - day.weekday() - 1) % 7 + 1)
        else:
            found = day - timedelta(days=(day.weekday() - wanted - 1) % 7 + 1)
        return TimeRange(found, found + _DAY)
    if unit == "weekend":
        return _next_weekend(day + _DAY) if after else _weekend(day - _DAY, last=False)
    n, vague = _count(None if count is None or count.lower() in ("the", "last") else count)
    length = timedelta(days=_UNIT_DAYS[unit])
    if n == 1:
        return TimeRange(day + _DAY, day + _DAY + length) if after else TimeRange(day - length, day)
    # "Two weeks before": about then, as "two weeks ago" is.
    back = n * _UNIT_DAYS[unit]
    slack = timedelta(days=max(1.0, back / 4) * (2 if vague else 1))
    centre = day + timedelta(days=back) if after else day - timedelta(days=back)
    return TimeRange(centre - slack, centre + slack + _DAY)


def _led_with_day(lead: re.Match[str], side: str, day: datetime) -> TimeRange | None:
    """:func:`_led`, and the day itself: what happened the week before August 3 is often told
    on August 3 ("last week I ..."), and a plan for the Saturday after is made that day."""
    period = _led(lead, side, day)
    if period is None:
        return None
    if side.lower() == "after":
        return TimeRange(min(period.start, day), period.end)
    return TimeRange(period.start, max(period.end, day + _DAY))


def _absolute(query: str) -> _Found | None:
    """A period named with its year ("on June 14, 2026", "in April 2026", "in early 2025")."""
    match = _BETWEEN.search(query)
    if match:
        first, first_day, last, last_day, year_text = match.groups()
        year = int(year_text)
        start_month, end_month = _MONTHS[first.lower()], _MONTHS[last.lower()]
        start_year = year - (start_month > end_month)
        begin = _day_or_none(start_year, start_month, int(first_day or 1))
        end = (
            _day_or_none(year, end_month, int(last_day))
            if last_day
            else (_month(year, end_month).end - _DAY).date()
        )
        if begin is not None and end is not None and begin <= end:
            return TimeRange(_midnight(begin), _midnight(end) + _DAY), match.span()
    for pattern in (_ISO, _MONTH_DAY_YEAR, _DAY_MONTH_YEAR):
        match = pattern.search(query)
        if match is None:
            continue
        side, *parts = match.groups()
        if pattern is _ISO:
            year, month, day = (int(p) for p in parts)
        elif pattern is _MONTH_DAY_YEAR:
            month, day, year = _MONTHS[parts[0].lower()], int(parts[1]), int(parts[2])
        else:
            day, month, year = int(parts[0]), _MONTHS[parts[1].lower()], int(parts[2])
        found = _day_or_none(year, month, day)
        if found is None:
            continue
        lead = _LEAD.search(query, 0, match.start()) if side else None
        if lead is not None and side is not None:
            # "the week before August 3, 2023", "the Sunday before October 25, 2022": a
            # period counted from that day rather than everything on one side of it.
            period = _led_with_day(lead, side, _midnight(found))
            if period is not None:
                return period, (lead.start(), match.end())
        return _bounded(side, _one_day(found)), match.span()
    match = _MONTH_YEAR.search(query)
    if match:
        side, part, month_name, year_text = match.groups()
        whole = _part(_month(int(year_text), _MONTHS[month_name.lower()]), part)
        return _bounded(side, whole), match.span()
    match = _SEASON_YEAR.search(query)
    if match:
        side, part, season, year_text = match.groups()
        year = int(year_text) + (season.lower() == "winter")
        # "The winter of 2025" starts in December 2025.
        return _bounded(side, _part(_season(season, year), part)), match.span()
    match = _HOLIDAY_YEAR.search(query)
    if match:
        side, name, year_text = match.groups()
        return _bounded(side, _holiday(name)(int(year_text))), match.span()
    match = _YEAR.search(query)
    if match:
        side, part, year_text = match.groups()
        year = int(year_text)
        whole = TimeRange(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
        return _bounded(side, _part(whole, part)), match.span()
    return None


def _count(word: str | None) -> tuple[int, bool]:
    """The number a count word stands for, and whether it is vague ("a few")."""
    if word is None:
        return 1, False
    key = " ".join(word.lower().split())
    return (int(key) if key.isdigit() else _COUNTS[key]), key in _VAGUE


def _relative(query: str, now: datetime) -> _Found | None:
    """A period counted back from the day of ``now``: "two weeks ago", "in the past three
    months", "yesterday", "last week", "this year", "last weekend"."""
    day = _midnight(now.astimezone(UTC).date())
    match = _AGO.search(query)
    if match:
        # A window around that day, a quarter of the distance wide on each side (at least a
        # day; twice that for vague counts such as "a few"), since people round: "two weeks
        # ago" is 10 to 18 days back.
        n, vague = _count(match.group(1))
        back = n * _UNIT_DAYS[match.group(2).lower()]
        slack = max(1.0, back / 4) * (2 if vague else 1)
        start = day - timedelta(days=back + slack)
        return TimeRange(start, day - timedelta(days=back - slack - 1)), match.span()
    match = _PAST.search(query)
    if match:
        back = _count(match.group(1))[0] * _UNIT_DAYS[match.group(2).lower()]
        return TimeRange(day - timedelta(days=back), day + _DAY), match.span()
    for pattern, make in _PHRASES:
        match = pattern.search(query)
        if match:
            return make(day), match.span()
    return None


def _weekday(query: str, now: datetime) -> _Found | None:
    """A weekday ("on Monday", "last Friday"): the most recent such day before the day of
    ``now``; "this
    Monday": the one of this week."""
    for match in _WEEKDAY.finditer(query):
        qualifier = (match.group(1) or "").lower()
        if qualifier in _ONE_SIDED:
            continue
        before = query[: match.start()].rstrip()
        word = before.rsplit(None, 1)[-1] if before else ""
        if not qualifier and word[:1].isupper() and not before.endswith((".", "!", "?")):
            continue  # a named day: "Maundy Thursday", "Black Friday"
        day = _midnight(now.astimezone(UTC).date())
        wanted = _WEEKDAYS[match.group(2).lower()]
        if qualifier == "this":
            found = _monday(day) + timedelta(days=wanted)
        else:
            found = day - timedelta(days=(day.weekday() - wanted - 1) % 7 + 1)
        return TimeRange(found, found + _DAY), match.span()
    return None


def _month_maker(
    month: int, day_text: str | None, part: str | None
) -> Callable[[int], TimeRange] | None:
    """The period of a month (or a third of it, or one of its days) in a given year."""
    if day_text is None:
        return lambda year: _part(_month(year, month), part)
    number = int(day_text)
    if _day_or_none(2000, month, number) is None:  # 2000 is a leap year: February 29 exists
        return None

    def make(year: int) -> TimeRange:
        found = _day_or_none(year, month, number)
        return _one_day(found) if found is not None else TimeRange(_OPEN_END, _OPEN_END)

    return make


def _yearless(query: str, now: datetime) -> _Found | None:
    """A month, day, season or holiday without a year: the most recent one ("in April" asked
    in March 2026 is April 2025; "last summer" is the last one that ended; "this summer" is
    the one of this year)."""
    for match in _MONTH_ALONE.finditer(query):
        qualifier, part, day_before, month_name, day_after = match.groups()
        qualifier = (qualifier or "").lower()
        day_text = day_before or day_after
        if qualifier in _ONE_SIDED or (not qualifier and not part and not day_text):
            continue
        make = _month_maker(_MONTHS[month_name.lower()], day_text, part)
        if make is None:
            continue
        if qualifier == "this":
            return make(now.year), match.span()
        return _recent(make, now, last=qualifier == "last"), match.span()
    for match in _SEASON_ALONE.finditer(query):
        qualifier, the, part, season = match.groups()
        qualifier = (qualifier or "").lower()
        # "fall" is mostly the verb: only "the fall", "last fall", "in the fall" ...
        if qualifier in _ONE_SIDED or (season.lower() == "fall" and not (the or qualifier)):
            continue
        if not (qualifier or the or part):
            continue

        def season_make(year: int, season: str = season, part: str | None = part) -> TimeRange:
            return _part(_season(season, year), part)

        if qualifier == "this":
            winter_ahead = season.lower() == "winter" and now.month == 12
            period = season_make(now.year + winter_ahead)
        else:
            period = _recent(season_make, now, last=qualifier == "last")
        return period, match.span()
    for match in _HOLIDAY_ALONE.finditer(query):
        qualifier = (match.group(1) or "").lower()
        if qualifier in _ONE_SIDED:
            continue
        make_holiday = _holiday(match.group(2))
        if qualifier == "this":
            return make_holiday(now.year), match.span()
        return _recent(make_holiday, now, last=qualifier == "last"), match.span()
    return None


def named_period(query: str, now: datetime) -> NamedPeriod | None:
    """The period ``query`` names, resolved against ``now`` (the moment it is asked), or None.

    Absolute dates with a year come first ("on June 14, 2026", "in April 2026", "the summer of
    2024", "in 2025"), then periods counted back from the day of ``now`` ("two weeks ago",
    "in the past three months", "yesterday", "last week", "this year"), weekdays ("on
    Monday"), and months, days, seasons and holidays without a year ("in April", "on March 3",
    "last summer", "at Easter"), which are the most recent ones.
    """
    named = _named(query, now)
    # A period still to come ("this weekend" asked on a Tuesday) holds no memory yet: it
    # selects none.
    return None if named is None or named.range.start > now else named


def _named(query: str, now: datetime) -> NamedPeriod | None:
    yearless = False
    found = _absolute(query)
    absolute = found is not None
    found = found or _relative(query, now) or _weekday(query, now)
    if found is None:
        found, yearless = _yearless(query, now), True
    if found is None:
        return None
    period, (start, end) = found
    if period.start >= period.end:
        return None
    phrase = query[start:end].strip()
    return NamedPeriod(period, (start, end), phrase, yearless=yearless, absolute=absolute)


def query_time_range(query: str, now: datetime) -> TimeRange | None:
    """The period a query names (see :func:`named_period`), or None."""
    named = named_period(query, now)
    return None if named is None else named.range


def without_period(query: str, now: datetime | None = None) -> str:
    """``query`` without the words of the phrase that names a period ("two weeks ago", "last
    summer", "on Monday", "before the wedding" once dated), for lexical matching: once the
    period selects and favours memories by date, its words ("weeks", "summer", "monday") are
    not what the memories are about, and they match many that are not.

    Month names and years stay ("in May 2023" -> "May 2023", "in March" -> "March"): the
    lexical index holds each memory's month and year of creation as words, so they match by
    date there too.
    """
    named = named_period(query, now or datetime.now(UTC))
    if named is None:
        return query
    start, end = named.span
    phrase = query[start:end]
    kept = [w for w in phrase.split() if _DATE_WORD.fullmatch(w.strip(".,;:!?'’"))]
    if not query_terms(" ".join(w for w in phrase.split() if w not in kept)):
        return query  # nothing but the month and year (and prepositions): all stays
    return " ".join(f"{query[:start]} {' '.join(kept)} {query[end:]}".split())


_DATE_WORD = re.compile(rf"(?i:{'|'.join(calendar.month_name[1:])}|(?:19|20)\d\d)")


def without_relative_time(query: str) -> str:
    """``query`` without the phrase that names a period (:func:`without_period`); the name
    ranking has long used. The phrase found does not depend on the moment of asking."""
    return without_period(query)


# -- periods relative to an event -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventCue:
    """A period relative to an event the query names: ``side`` ("before" or "after") of
    ``event`` ("the wedding", "I moved"), at ``span`` in the query; ``terms`` are the event's
    analysed words, which a memory reporting it contains."""

    side: str
    event: str
    span: tuple[int, int]
    terms: tuple[str, ...]


_EVENT = re.compile(
    r"\b((?i:before|after|since|until|till))\s+"
    r"((?:(?i:the|my|our|his|her|their|we|he|she|they)|I|[A-Z][a-z]+)\b"
    r"(?:\s+(?!(?:and|but|or|so|when|while|because|then|did|do|does)\b)[\w'-]+){0,5})",
)
# Events a store does not date: daily routine, deictic words.
_ROUTINE = frozenset(
    query_terms(
        "work school lunch dinner breakfast supper bed class classes that this then it noon "
        "midnight sunset sunrise dark sleep shower meeting call"
    )
)


_MEASURES = re.compile(r"\bhow (?:many|much|long|often)\b", re.IGNORECASE)


def event_cue(query: str) -> EventCue | None:
    """The period relative to an event that ``query`` names ("before the wedding", "after I
    moved", "since the baby was born"), or None: also None where the phrase names a time
    ("before today", "after Christmas") or routine ("after work"), and in a question that
    measures ("How many days before the party did I order the gift?", "How much more did I pay
    after the quote?"): its answer lies on both sides of the event."""
    if _MEASURES.search(query):
        return None
    for match in _EVENT.finditer(query):
        side, event = match.group(1), match.group(2)
        # "before Christmas", "after the summer", "since Monday": a time, not an event.
        if named_period(f"in {event}", datetime.now(UTC)) is not None:
            continue
        terms = tuple(t for t in query_terms(event) if t not in _ROUTINE)
        if not terms or not set(words(event)).isdisjoint(_TIME_WORDS):
            continue
        kind = "before" if side.lower() in ("before", "until", "till") else "after"
        return EventCue(kind, event, match.span(), terms)
    return None


def with_event_date(
    query: str, cue: EventCue, when: TimeRange, told: datetime, *, exact: bool
) -> str | None:
    """``query`` with the event of ``cue`` replaced by its date, in words
    :func:`named_period` reads: "before the wedding" -> "until 2026-06-14", "after I moved" ->
    "since 2026-03-03", "the day before I saw the doctor" -> "the day before 2026-05-10".

    ``when`` is when the event took place, ``told`` when the memory reporting it was stored.
    Both days belong to the period (what was said of the event is often said then: "the car
    broke down last week, so I bought a new one"), except under a count ("the day before"),
    which needs the event's date said with its year (``exact``): None otherwise, since a
    narrow window around a misdated event misses everything.
    """
    start, end = cue.span
    if _LEAD.search(query, 0, start) is not None:
        if not exact:
            return None
        day = when.start if cue.side == "before" else when.end - timedelta(microseconds=1)
        bound = f"{cue.side} {day.date().isoformat()}"
    elif cue.side == "before":
        bound = f"until {max(when.end - timedelta(microseconds=1), told).date().isoformat()}"
    else:
        bound = f"since {min(when.start, told).date().isoformat()}"
    return f"{query[:start]}{bound}{query[end:]}"


def with_year(query: str, named: NamedPeriod, earlier: NamedPeriod) -> str | None:
    """``query`` naming ``earlier`` (the same month, day, season or holiday as ``named``, of
    an earlier year) by its year: "in May" -> "in May 2023"; None if that cannot be said."""
    end = named.span[1]
    year = (earlier.range.start + _DAY).year  # winter and New Year's Eve begin the year before
    text = f"{query[:end]} {year}{query[end:]}"
    found = _named(text, earlier.range.start)
    return text if found is not None and found.range == earlier.range else None


def tells_of(text: str, created: datetime, period: TimeRange) -> bool:
    """True if ``text`` (a memory stored at ``created``) names a time within ``period``: "I
    watched it on Sunday", told on the Tuesday after, tells of that Sunday; "the hotel for
    April 2027" does not tell of April 2026, nor "come back in six months" of today."""
    named = _named(text, created)
    if named is None or named.range.open_start or named.range.open_end:
        return False
    return named.range.start < period.end and period.start < named.range.end


@dataclass(frozen=True, slots=True)
class StatedPeriod:
    """When a memory says its event took place (``stated``; ``exact``: a date with its year,
    "on June 14, 2026"), else the day it was stored."""

    range: TimeRange
    stated: bool
    exact: bool = False


def stated_period(text: str, created: datetime) -> StatedPeriod:
    """When the event a memory reports took place: the date it states ("on June 14, 2026",
    "on March 3", "yesterday", "today", "two weeks ago", counted from when it was stored; it
    may lie ahead of that), else the day it was stored."""
    named = _named(text, created)
    if named is not None and not (named.range.open_start or named.range.open_end):
        return StatedPeriod(named.range, stated=True, exact=named.absolute)
    return StatedPeriod(_one_day(created.astimezone(UTC).date()), stated=False)
