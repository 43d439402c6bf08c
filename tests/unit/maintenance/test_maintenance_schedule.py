"""The event intervals of the consolidation schedule, and the maintenance config's checks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memvault.config import MemvaultConfig
from memvault.consolidation.schedule import (
    EVENT_INTERVALS,
    PERIODIC_INTERVALS,
    ConsolidationScheduler,
    is_due,
)
from memvault.maintenance import MaintenanceConfig
from memvault.models import ConsolidationInterval

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_after_autonomous_is_due_on_its_event_only() -> None:
    after = ConsolidationInterval.AFTER_AUTONOMOUS
    assert ConsolidationInterval("after_autonomous") is after
    assert is_due(after, None, NOW, autonomous_run=True)
    assert not is_due(after, None, NOW)
    assert not is_due(after, None, NOW, session_ended=True)
    assert not is_due(ConsolidationInterval.AFTER_SESSION, None, NOW, autonomous_run=True)
    scheduler = ConsolidationScheduler("after_autonomous")
    assert scheduler.due_agents(["a", "b"], now=NOW, autonomous_run=True) == ["a", "b"]
    assert scheduler.due_agents(["a", "b"], now=NOW) == []


def test_interval_kinds_are_disjoint() -> None:
    assert EVENT_INTERVALS.isdisjoint(PERIODIC_INTERVALS)
    rest = set(ConsolidationInterval) - EVENT_INTERVALS - PERIODIC_INTERVALS
    assert rest == {ConsolidationInterval.NEVER, ConsolidationInterval.MANUAL}


def test_maintenance_config_loads_and_checks() -> None:
    config = MemvaultConfig.model_validate(
        {
            "options": {"consolidation_interval": "after_autonomous"},
            "maintenance": {"sweep_interval": "hourly", "consolidation_strategy": "extract"},
        }
    )
    assert config.options.consolidation_interval is ConsolidationInterval.AFTER_AUTONOMOUS
    assert config.maintenance.sweep_interval is ConsolidationInterval.HOURLY
    assert config.maintenance.consolidation_strategy == "extract"
    for bad in ({"poll_seconds": 0}, {"lease_seconds": 0.5}, {"consolidation_strategy": "x"}):
        with pytest.raises(ValidationError):
            MaintenanceConfig.model_validate(bad)
