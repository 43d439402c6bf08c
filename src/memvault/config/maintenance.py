"""``memory.maintenance``: when the background maintenance passes run.

Consolidation follows ``options.consolidation_interval`` (the seed's key); retention sweeps and
the skill evolver have their own intervals here. ``memvault serve`` runs a scheduler when
``enabled``; ``memvault maintain`` runs one pass (or ``--daemon``) whatever ``enabled`` says.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.models import ConsolidationInterval

__all__ = ["MaintenanceConfig"]


class MaintenanceConfig(BaseModel):
    """The maintenance scheduler's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    """Run the scheduler inside ``memvault serve``."""
    poll_seconds: float = Field(default=60.0, gt=0.0, le=86_400.0)
    """How often the scheduler checks whether a pass is due."""
    sweep_interval: ConsolidationInterval = ConsolidationInterval.DAILY
    """Retention sweeps (age rules and caps, expired memories to the archive)."""
    evolver_interval: ConsolidationInterval = ConsolidationInterval.DAILY
    """The skill evolver, when ``procedural.evolver.enabled``."""
    lease_seconds: float = Field(default=600.0, ge=1.0)
    """How long one runner holds the store's maintenance lease before another may take over."""
    consolidation_strategy: Literal["simple", "dual_mode", "llm", "extract"] = "simple"
    """The strategy of scheduled and triggered consolidation (``simple`` needs no LLM; the
    others need the memory's LLM and fail, logged, without one)."""
