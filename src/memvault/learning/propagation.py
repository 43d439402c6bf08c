"""Propagation strategies: which other agents receive a copy of an agent's lesson.

Copies are tagged ``propagated:{source_agent_id}``; the source never receives its own lesson
and at most ``max_propagation_targets`` agents do (the first by agent id, so the choice is
stable). Agents are matched by their profiles (role, department).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memvault.config import PropagationConfig, PropagationStrategyName
from memvault.learning.models import AgentProfile

__all__ = [
    "DepartmentScopedPropagation",
    "NoPropagation",
    "PropagationStrategy",
    "RoleScopedPropagation",
    "propagation_strategy",
    "propagation_tag",
]


def propagation_tag(source_agent_id: str) -> str:
    """The tag a propagated copy carries."""
    return f"propagated:{source_agent_id}"


class PropagationStrategy(Protocol):
    """Chooses the agents that receive a copy of a lesson."""

    @property
    def name(self) -> str:
        """``none``, ``role`` or ``department``."""
        ...

    def targets(
        self, source: AgentProfile | None, profiles: Sequence[AgentProfile]
    ) -> tuple[str, ...]:
        """The agent ids to copy the source agent's lesson to."""
        ...


class NoPropagation:
    """Lessons stay with their agent (the safe default)."""

    @property
    def name(self) -> str:
        """``none``."""
        return "none"

    def targets(
        self, source: AgentProfile | None, profiles: Sequence[AgentProfile]
    ) -> tuple[str, ...]:
        """Nobody."""
        return ()


class _Scoped:
    _field: str
    _name: str

    def __init__(self, max_targets: int = 10) -> None:
        self._max = max_targets

    @property
    def name(self) -> str:
        """The scope's name."""
        return self._name

    def targets(
        self, source: AgentProfile | None, profiles: Sequence[AgentProfile]
    ) -> tuple[str, ...]:
        """Agents sharing the source's role/department, source excluded, at most the limit."""
        if source is None:
            return ()
        key = getattr(source, self._field)
        if key is None:
            return ()
        found = sorted(
            p.agent_id
            for p in profiles
            if p.agent_id != source.agent_id and getattr(p, self._field) == key
        )
        return tuple(found[: self._max])


class RoleScopedPropagation(_Scoped):
    """Copies lessons to agents with the same role."""

    _field = "role"
    _name = "role"


class DepartmentScopedPropagation(_Scoped):
    """Copies lessons to agents in the same department."""

    _field = "department"
    _name = "department"


def propagation_strategy(config: PropagationConfig) -> PropagationStrategy:
    """The strategy ``config.strategy`` names."""
    if config.strategy is PropagationStrategyName.ROLE:
        return RoleScopedPropagation(config.max_propagation_targets)
    if config.strategy is PropagationStrategyName.DEPARTMENT:
        return DepartmentScopedPropagation(config.max_propagation_targets)
    return NoPropagation()
