from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memvault.consolidation import ConsolidationScheduler, is_due, next_due
from memvault.models import ConsolidationInterval as Interval

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("interval", "period"),
    [
        (Interval.HOURLY, timedelta(hours=1)),
        (Interval.DAILY, timedelta(days=1)),
        (Interval.WEEKLY, timedelta(weeks=1)),
    ],
)
def test_periodic_intervals(interval: Interval, period: timedelta) -> None:
    assert is_due(interval, None, NOW)  # never ran
    assert not is_due(interval, NOW - period + timedelta(seconds=1), NOW)
    assert is_due(interval, NOW - period, NOW)
    assert is_due(interval, NOW - 3 * period, NOW)
    assert not is_due(interval, NOW + timedelta(minutes=5), NOW)  # clock stepped back
    assert next_due(interval, NOW) == NOW + period
    # the end of a session does not make a periodic schedule due
    assert not is_due(interval, NOW, NOW, session_ended=True)


def test_after_session_only_when_session_ended() -> None:
    assert is_due(Interval.AFTER_SESSION, None, NOW, session_ended=True)
    assert is_due(Interval.AFTER_SESSION, NOW, NOW, session_ended=True)
    assert not is_due(Interval.AFTER_SESSION, None, NOW)
    assert not is_due(Interval.AFTER_SESSION, NOW - timedelta(weeks=52), NOW)


@pytest.mark.parametrize("interval", [Interval.NEVER, Interval.MANUAL])
def test_never_and_manual_are_never_due(interval: Interval) -> None:
    assert not is_due(interval, None, NOW)
    assert not is_due(interval, NOW - timedelta(weeks=52), NOW, session_ended=True)
    assert next_due(interval, NOW) is None


def test_every_interval_is_handled() -> None:
    for interval in Interval:
        assert isinstance(is_due(interval, None, NOW), bool)


def test_naive_datetimes_rejected() -> None:
    with pytest.raises(ValueError, match="now"):
        is_due(Interval.DAILY, None, datetime(2026, 3, 10))
    with pytest.raises(ValueError, match="last_run"):
        is_due(Interval.DAILY, datetime(2026, 3, 9), NOW)


def test_other_timezones_compare_correctly() -> None:
    from datetime import timezone

    plus2 = timezone(timedelta(hours=2))
    last = datetime(2026, 3, 10, 13, 30, tzinfo=plus2)  # 11:30 UTC
    assert not is_due(Interval.HOURLY, last, NOW)
    assert is_due(Interval.HOURLY, last - timedelta(minutes=30), NOW)


def test_scheduler_tracks_agents() -> None:
    scheduler = ConsolidationScheduler("daily")
    assert scheduler.interval is Interval.DAILY
    assert scheduler.due_agents(["a", "b"], now=NOW) == ["a", "b"]
    scheduler.record_run("a", NOW - timedelta(hours=2))
    assert scheduler.last_run("a") == NOW - timedelta(hours=2)
    assert scheduler.due_agents(["a", "b"], now=NOW) == ["b"]
    assert scheduler.is_due("a", now=NOW + timedelta(hours=22))
    with pytest.raises(ValueError):
        ConsolidationScheduler("fortnightly")
    session = ConsolidationScheduler(Interval.AFTER_SESSION)
    assert not session.is_due("a", now=NOW)
    assert session.is_due("a", now=NOW, session_ended=True)
