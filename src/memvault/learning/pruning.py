"""Pruning strategies for procedural memory: pure functions from lessons to the ones to drop.

* :class:`TtlPruningStrategy` drops lessons older than ``max_age_days`` (default 90);
* :class:`ParetoPruningStrategy` keeps the Pareto frontier of (relevance, recency), front by
  front, down to ``max_entries``;
* :class:`HybridPruningStrategy` applies TTL first, then Pareto on what remains.

The caller archives what they return (nothing is destroyed). Relevance of a lesson is its
importance (its confidence when learned) plus ``log1p(access_count)``; recency is its last use,
or its creation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from memvault.config import PruningConfig, PruningStrategyName
from memvault.models import MemoryEntry

__all__ = [
    "HybridPruningStrategy",
    "ParetoPruningStrategy",
    "PruneDecision",
    "PruningStrategy",
    "TtlPruningStrategy",
    "pareto_fronts",
    "pruning_strategy",
]


@dataclass(frozen=True, slots=True)
class PruneDecision:
    """Ids to archive, by the rule that dropped them."""

    expired: tuple[str, ...] = ()
    dominated: tuple[str, ...] = ()


class PruningStrategy(Protocol):
    """Chooses which of an agent's lessons to archive."""

    @property
    def name(self) -> str:
        """The strategy's name (``ttl``, ``pareto``, ``hybrid``, ``none``)."""
        ...

    def select(self, entries: Sequence[MemoryEntry], *, now: datetime) -> PruneDecision:
        """The lessons of ``entries`` to archive at ``now``."""
        ...


def _relevance(entry: MemoryEntry) -> float:
    return entry.metadata.importance + math.log1p(entry.access_count)


def _recency(entry: MemoryEntry) -> float:
    last = entry.last_accessed_at or entry.created_at
    return max(last, entry.created_at).timestamp()


def pareto_fronts(entries: Sequence[MemoryEntry]) -> list[list[MemoryEntry]]:
    """Non-dominated sorting on (relevance, recency): the first front dominates the rest."""
    points = [(_relevance(e), _recency(e), e) for e in entries]
    fronts: list[list[MemoryEntry]] = []
    remaining = points
    while remaining:
        front = [
            p
            for p in remaining
            if not any(
                (q[0] >= p[0] and q[1] >= p[1]) and (q[0] > p[0] or q[1] > p[1]) for q in remaining
            )
        ]
        fronts.append([p[2] for p in front])
        chosen = {id(p) for p in front}
        remaining = [p for p in remaining if id(p) not in chosen]
    return fronts


class NoPruning:
    """Keeps every lesson."""

    @property
    def name(self) -> str:
        """``none``."""
        return "none"

    def select(self, entries: Sequence[MemoryEntry], *, now: datetime) -> PruneDecision:
        """Nothing to archive."""
        return PruneDecision()


class TtlPruningStrategy:
    """Archives lessons created more than ``max_age_days`` ago."""

    def __init__(self, max_age_days: int = 90) -> None:
        self._max_age = timedelta(days=max_age_days)

    @property
    def name(self) -> str:
        """``ttl``."""
        return "ttl"

    def select(self, entries: Sequence[MemoryEntry], *, now: datetime) -> PruneDecision:
        """The lessons older than the limit."""
        cutoff = now - self._max_age
        return PruneDecision(expired=tuple(e.id for e in entries if e.created_at < cutoff))


class ParetoPruningStrategy:
    """Keeps whole Pareto fronts of (relevance, recency) down to ``max_entries`` lessons."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries

    @property
    def name(self) -> str:
        """``pareto``."""
        return "pareto"

    def select(self, entries: Sequence[MemoryEntry], *, now: datetime) -> PruneDecision:
        """The lessons outside the best fronts once ``max_entries`` are kept."""
        if len(entries) <= self._max:
            return PruneDecision()
        kept: list[MemoryEntry] = []
        for front in pareto_fronts(entries):
            room = self._max - len(kept)
            if room <= 0:
                break
            if len(front) > room:
                # A front that does not fit: its most relevant, then most recent, members stay.
                front = sorted(front, key=lambda e: (_relevance(e), _recency(e)), reverse=True)
            kept.extend(front[:room])
        keep = {e.id for e in kept}
        return PruneDecision(dominated=tuple(e.id for e in entries if e.id not in keep))


class HybridPruningStrategy:
    """TTL first, then Pareto on the lessons TTL left."""

    def __init__(self, ttl: TtlPruningStrategy, pareto: ParetoPruningStrategy) -> None:
        self._ttl = ttl
        self._pareto = pareto

    @property
    def name(self) -> str:
        """``hybrid``."""
        return "hybrid"

    def select(self, entries: Sequence[MemoryEntry], *, now: datetime) -> PruneDecision:
        """Expired lessons, and the dominated ones among the rest."""
        expired = self._ttl.select(entries, now=now).expired
        gone = set(expired)
        rest = [e for e in entries if e.id not in gone]
        return PruneDecision(
            expired=expired, dominated=self._pareto.select(rest, now=now).dominated
        )


def pruning_strategy(config: PruningConfig) -> PruningStrategy:
    """The strategy ``config.strategy`` names."""
    ttl = TtlPruningStrategy(config.max_age_days)
    pareto = ParetoPruningStrategy(config.max_entries)
    if config.strategy is PruningStrategyName.TTL:
        return ttl
    if config.strategy is PruningStrategyName.PARETO:
        return pareto
    if config.strategy is PruningStrategyName.HYBRID:
        return HybridPruningStrategy(ttl, pareto)
    return NoPruning()
