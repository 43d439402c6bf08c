"""Retention: how long memories live, which ones a full store lets go, in pure functions.

Two mechanisms bound growth, and both move entries to the archive (never straight to nothing):

* **Rules** give a maximum age per category. Company-level rules and per-agent overrides resolve
  in this order: the agent's rule for the category, the company's rule for the category, the
  agent's default, the company's default, and otherwise forever. An entry older than its rule,
  or past its own ``expires_at``, is *expired*.
* **Caps** bound how many live entries an agent keeps (``max_memories_per_agent``) and how many
  of one category (``max_per_category``, e.g. InitRunner's max_memories / max_episodes /
  max_procedures). Over a cap, the entries with the lowest *retention score* are evicted.

The retention score is an Ebbinghaus forgetting curve whose stability grows with use:
``R = exp(-t / S)`` with ``S = stability * (1 + ln(1 + access_count)) * (0.5 + importance)``,
``t`` the hours since the entry was last accessed (or created). A memory recalled often decays
slowly; a never-used, unimportant one fades first. (The textbook ``S * ln(1 + n)`` is zero for a
never-accessed entry, so the count boosts a base stability instead of replacing it.)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field

from memvault.models import MemoryCategory, MemoryEntry

__all__ = [
    "AgentRetention",
    "RetentionPolicy",
    "RetentionReport",
    "expired_ids",
    "retention_score",
    "select_evictions",
]

DEFAULT_STABILITY_HOURS = 24.0 * 7
"""Base stability of the forgetting curve: a fresh, unused entry keeps ~87% after one day."""


class AgentRetention(BaseModel):
    """One agent's overrides: a default maximum age and per-category ones (days)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_days: int | None = Field(default=None, ge=1)
    categories: Mapping[MemoryCategory, int] = Field(default_factory=dict)


class RetentionPolicy(BaseModel):
    """Retention rules and caps for a store (company level plus per-agent overrides)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    default_days: int | None = Field(default=None, ge=1)
    categories: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    agents: Mapping[str, AgentRetention] = Field(default_factory=dict)
    max_memories_per_agent: int | None = Field(default=None, ge=1)
    max_per_category: Mapping[MemoryCategory, int] = Field(default_factory=dict)
    stability_hours: float = Field(default=DEFAULT_STABILITY_HOURS, gt=0)
    eviction_margin: float = Field(default=0.05, ge=0.0, lt=1.0)
    """Over a cap, evict down to ``cap - int(cap * eviction_margin)`` (10k cap: 9,500), so the
    scan that picks the weakest entries runs once per few hundred writes, not on every write
    at the cap. Caps under 20 are kept exactly."""

    def cap_target(self, cap: int) -> int:
        """How many entries an eviction for ``cap`` leaves."""
        return cap - int(cap * self.eviction_margin)

    def max_age(self, agent_id: str, category: MemoryCategory) -> timedelta | None:
        """The maximum age of the agent's entries of ``category`` (None: forever).

        Resolution order: agent per-category, company per-category, agent default, company
        default, forever.
        """
        agent = self.agents.get(agent_id)
        for days in (
            agent.categories.get(category) if agent is not None else None,
            self.categories.get(category),
            agent.default_days if agent is not None else None,
            self.default_days,
        ):
            if days is not None:
                return timedelta(days=days)
        return None

    @property
    def has_caps(self) -> bool:
        """True if any cap is set."""
        return self.max_memories_per_agent is not None or bool(self.max_per_category)

    @property
    def has_rules(self) -> bool:
        """True if any age rule is set."""
        return (
            self.default_days is not None
            or bool(self.categories)
            or any(a.default_days is not None or a.categories for a in self.agents.values())
        )


@dataclass
class RetentionReport:
    """What a retention sweep archived: original id -> archive id, per reason."""

    expired: dict[str, str] = field(default_factory=dict)
    evicted: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many entries were archived."""
        return len(self.expired) + len(self.evicted)


def retention_score(
    entry: MemoryEntry, now: datetime, *, stability_hours: float = DEFAULT_STABILITY_HOURS
) -> float:
    """How well ``entry`` is remembered at ``now``, in (0, 1] (see module docstring)."""
    last = entry.last_accessed_at or entry.created_at
    hours = max((now - last).total_seconds() / 3600.0, 0.0)
    importance = entry.metadata.importance
    stability = stability_hours * (1.0 + math.log1p(entry.access_count)) * (0.5 + importance)
    return math.exp(-hours / stability)


def expired_ids(
    entries: Iterable[MemoryEntry], policy: RetentionPolicy, now: datetime
) -> list[str]:
    """Ids of entries past their ``expires_at`` or older than their category's rule."""
    out: list[str] = []
    for e in entries:
        if e.expires_at is not None and e.expires_at <= now:
            out.append(e.id)
            continue
        age = policy.max_age(e.agent_id, e.category)
        if age is not None and now - e.created_at > age:
            out.append(e.id)
    return out


def select_evictions(
    entries: Sequence[MemoryEntry], policy: RetentionPolicy, now: datetime
) -> list[str]:
    """Ids to evict so the (live) ``entries`` of one agent fit the policy's caps.

    Per-category caps are applied first, then the per-agent cap on what is left; each evicts
    the lowest retention scores (ties: oldest first), so the result is deterministic.
    """

    def weakest_first(group: Iterable[MemoryEntry]) -> list[MemoryEntry]:
        return sorted(
            group,
            key=lambda e: (
                retention_score(e, now, stability_hours=policy.stability_hours),
                e.created_at,
                e.id,
            ),
        )

    evicted: list[str] = []
    gone: set[str] = set()
    for category, cap in policy.max_per_category.items():
        group = [e for e in entries if e.category is category]
        if len(group) > cap:
            for e in weakest_first(group)[: len(group) - policy.cap_target(cap)]:
                evicted.append(e.id)
                gone.add(e.id)
    cap_all = policy.max_memories_per_agent
    left = [e for e in entries if e.id not in gone]
    if cap_all is not None and len(left) > cap_all:
        evicted.extend(e.id for e in weakest_first(left)[: len(left) - policy.cap_target(cap_all)])
    return evicted
