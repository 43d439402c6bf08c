"""Graph expansion and five-signal re-ranking of a search's results (pure functions).

Both run after :func:`memvault.retrieval.pipeline.rank`, on the ranked entries of a widened
search, and only when a preset asks for them (``graph_weight`` > 0, ``signals`` set):

* graph expansion merges graph recall into the ranking: ``r' = r + w * a * (1 - r)`` for a
  result of relevance ``r`` whose graph activation is ``a`` (monotone in both, stays in
  [0, 1]);
* five-signal retrieval (seed 004-18) combines relevance with recency, access frequency,
  causal distance through the graph (the activation, 1 for a memory naming a query entity,
  less per hop) and novelty (the importance scored at write).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from memvault.models import MemoryEntry

__all__ = ["FiveSignalWeights", "five_signal_rank", "merge_activation"]


class FiveSignalWeights(BaseModel):
    """Weights of the five signals (relevance is the search's own relevance)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    relevance: float = Field(default=1.0, ge=0.0)
    recency: float = Field(default=0.03, ge=0.0)
    frequency: float = Field(default=0.03, ge=0.0)
    causal: float = Field(default=0.15, ge=0.0)
    novelty: float = Field(default=0.03, ge=0.0)
    half_life_days: float = Field(default=30.0, gt=0.0)


def merge_activation(
    entries: Sequence[MemoryEntry], activation: Mapping[str, float], *, weight: float
) -> list[MemoryEntry]:
    """``entries`` re-scored with their graph activation, best first (see module docstring)."""
    out = []
    for e in entries:
        r = e.relevance_score or 0.0
        a = activation.get(e.id, 0.0)
        out.append(e.model_copy(update={"relevance_score": r + weight * a * (1.0 - r)}))
    out.sort(key=lambda e: -(e.relevance_score or 0.0))
    return out


def five_signal_rank(
    entries: Sequence[MemoryEntry],
    activation: Mapping[str, float],
    weights: FiveSignalWeights,
    *,
    now: datetime,
) -> list[MemoryEntry]:
    """``entries`` ranked by the weighted sum of the five signals, normalised to [0, 1]."""
    if not entries:
        return []
    top_access = max(e.access_count for e in entries)
    total = (
        weights.relevance + weights.recency + weights.frequency + weights.causal + weights.novelty
    ) or 1.0
    out = []
    for e in entries:
        seen = e.last_accessed_at or e.created_at
        age_days = max(0.0, (now - seen).total_seconds() / 86_400.0)
        recency = math.exp(-age_days / weights.half_life_days)
        frequency = math.log1p(e.access_count) / math.log1p(top_access) if top_access else 0.0
        score = (
            weights.relevance * (e.relevance_score or 0.0)
            + weights.recency * recency
            + weights.frequency * frequency
            + weights.causal * activation.get(e.id, 0.0)
            + weights.novelty * e.metadata.importance
        ) / total
        out.append(e.model_copy(update={"relevance_score": score}))
    out.sort(key=lambda e: -(e.relevance_score or 0.0))
    return out
