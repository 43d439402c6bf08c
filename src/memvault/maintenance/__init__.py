"""Background maintenance: consolidation, retention sweeps and the skill evolver on a schedule.

:class:`MaintenanceScheduler` runs passes over one memory's store (``memvault maintain``, and
``memvault serve`` through :class:`ServiceMaintenance` for every tenant it serves); last-run
times and the one-runner lease live in the store (:mod:`memvault.maintenance.state`).
:func:`consolidate_on` is the ``after_session`` / ``after_autonomous`` trigger.

The names load lazily: the scheduler sits above the memory itself and loads it, which a
caller asking only for :class:`MaintenanceConfig` should not pay for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault._lazy import lazy_attributes
from memvault.config.maintenance import MaintenanceConfig

if TYPE_CHECKING:
    from memvault.consolidation.triggers import consolidate_on
    from memvault.maintenance.scheduler import (
        ConsolidationRun,
        EvolverRun,
        MaintenanceReport,
        MaintenanceScheduler,
        MergeGroup,
        ServiceMaintenance,
        SweepRun,
    )
    from memvault.maintenance.state import (
        InMemoryMaintenanceState,
        Lease,
        MaintenanceState,
        PostgresMaintenanceState,
        SQLiteMaintenanceState,
        open_maintenance_state,
    )

__all__ = [
    "ConsolidationRun",
    "EvolverRun",
    "InMemoryMaintenanceState",
    "Lease",
    "MaintenanceConfig",
    "MaintenanceReport",
    "MaintenanceScheduler",
    "MaintenanceState",
    "MergeGroup",
    "PostgresMaintenanceState",
    "SQLiteMaintenanceState",
    "ServiceMaintenance",
    "SweepRun",
    "consolidate_on",
    "open_maintenance_state",
]

_HOME = {
    "ConsolidationRun": "scheduler",
    "EvolverRun": "scheduler",
    "MaintenanceReport": "scheduler",
    "MaintenanceScheduler": "scheduler",
    "MergeGroup": "scheduler",
    "ServiceMaintenance": "scheduler",
    "SweepRun": "scheduler",
    "InMemoryMaintenanceState": "state",
    "Lease": "state",
    "MaintenanceState": "state",
    "PostgresMaintenanceState": "state",
    "SQLiteMaintenanceState": "state",
    "open_maintenance_state": "state",
}


__getattr__ = lazy_attributes(
    __name__,
    {name: f"{__name__}.{h}" for name, h in _HOME.items()}
    # The event trigger lives with consolidation (agent capture and sessions call it).
    | {"consolidate_on": "memvault.consolidation.triggers"},
)
