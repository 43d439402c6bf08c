"""Background maintenance: consolidation, retention sweeps and the skill evolver on a schedule."""

from memvault.maintenance.config import MaintenanceConfig

__all__ = ["MaintenanceConfig"]
