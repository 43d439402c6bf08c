"""When consolidation is due, for each :class:`~memvault.models.ConsolidationInterval`.

Pure time arithmetic; whoever runs the jobs (the maintenance scheduler, a CLI command, a
session or capture hook) asks :func:`is_due` and records runs. ``AFTER_SESSION`` and
``AFTER_AUTONOMOUS`` are due on their event only (a session ended, an autonomous run finished),
never by time. ``MANUAL`` and ``NEVER`` are never due on their own: a manual
``memvault consolidate`` runs regardless of the schedule, which is the caller's decision.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memvault.models import ConsolidationInterval, aware_utc

__all__ = ["EVENT_INTERVALS", "PERIODIC_INTERVALS", "ConsolidationScheduler", "is_due", "next_due"]

_PERIODS = {
    ConsolidationInterval.HOURLY: timedelta(hours=1),
    ConsolidationInterval.DAILY: timedelta(days=1),
    ConsolidationInterval.WEEKLY: timedelta(weeks=1),
}

PERIODIC_INTERVALS = frozenset(_PERIODS)
"""The intervals that fall due by time (the maintenance scheduler runs them)."""

EVENT_INTERVALS = frozenset(
    {ConsolidationInterval.AFTER_SESSION, ConsolidationInterval.AFTER_AUTONOMOUS}
)
"""The intervals that fall due on an event (the session manager and the capture calls)."""


def _utc(value: datetime, name: str) -> datetime:
    try:
        return aware_utc(value) or value
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None


def next_due(interval: ConsolidationInterval, last_run: datetime | None) -> datetime | None:
    """When a periodic interval is next due (``None``: due now, or never due by time).

    Only HOURLY, DAILY and WEEKLY have a time; for them ``None`` means "never ran, due now".
    """
    period = _PERIODS.get(interval)
    if period is None or last_run is None:
        return None
    return _utc(last_run, "last_run") + period


def is_due(
    interval: ConsolidationInterval,
    last_run: datetime | None,
    now: datetime,
    *,
    session_ended: bool = False,
    autonomous_run: bool = False,
) -> bool:
    """True if consolidation should run now under ``interval``.

    Periodic intervals are due when they never ran or a full period has passed since
    ``last_run`` (a ``last_run`` in the future, after a clock step back, is not due).
    AFTER_SESSION is due exactly when ``session_ended`` is set, AFTER_AUTONOMOUS exactly when
    ``autonomous_run`` is (an autonomous run finished). NEVER and MANUAL never are.

    Raises:
        ValueError: ``now`` or ``last_run`` is a naive datetime.
    """
    at = _utc(now, "now")
    if interval in _PERIODS:
        due = next_due(interval, last_run)
        return due is None or at >= due
    if interval is ConsolidationInterval.AFTER_SESSION:
        return session_ended
    if interval is ConsolidationInterval.AFTER_AUTONOMOUS:
        return autonomous_run
    return False


class ConsolidationScheduler:
    """Tracks the last run per agent and says which agents are due under one interval."""

    def __init__(self, interval: ConsolidationInterval | str) -> None:
        self.interval = ConsolidationInterval(interval)
        self._last_run: dict[str, datetime] = {}

    def __repr__(self) -> str:
        """Show the interval and how many agents have run."""
        agents = len(self._last_run)
        return f"ConsolidationScheduler(interval={self.interval.value!r}, agents={agents})"

    def last_run(self, agent_id: str) -> datetime | None:
        """When ``agent_id`` was last consolidated, if it was."""
        return self._last_run.get(agent_id)

    def record_run(self, agent_id: str, when: datetime) -> None:
        """Remember that ``agent_id`` was consolidated at ``when``."""
        self._last_run[agent_id] = _utc(when, "when")

    def is_due(
        self,
        agent_id: str,
        *,
        now: datetime,
        session_ended: bool = False,
        autonomous_run: bool = False,
    ) -> bool:
        """True if ``agent_id`` should be consolidated now (see :func:`is_due`)."""
        return is_due(
            self.interval,
            self._last_run.get(agent_id),
            now,
            session_ended=session_ended,
            autonomous_run=autonomous_run,
        )

    def due_agents(
        self,
        agent_ids: list[str],
        *,
        now: datetime,
        session_ended: bool = False,
        autonomous_run: bool = False,
    ) -> list[str]:
        """The agents of ``agent_ids`` that are due, in the given order."""
        return [
            a
            for a in agent_ids
            if self.is_due(a, now=now, session_ended=session_ended, autonomous_run=autonomous_run)
        ]
