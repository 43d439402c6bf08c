"""Retention rules resolve in the documented order; the forgetting curve and caps pick victims."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memvault.models import MemoryCategory, MemoryEntry, MemoryMetadata
from memvault.write.retention import (
    AgentRetention,
    RetentionPolicy,
    expired_ids,
    retention_score,
    select_evictions,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SEM, EPI = MemoryCategory.SEMANTIC, MemoryCategory.EPISODIC


def entry(
    i: int,
    *,
    age_days: float = 0,
    category: MemoryCategory = SEM,
    agent: str = "a",
    access: int = 0,
    accessed_days_ago: float | None = None,
    importance: float = 0.5,
    expires_in_days: float | None = None,
) -> MemoryEntry:
    created = NOW - timedelta(days=age_days)
    return MemoryEntry(
        id=f"m{i:03d}",
        agent_id=agent,
        category=category,
        content=f"memory {i}",
        metadata=MemoryMetadata(importance=importance),
        created_at=created,
        updated_at=created,
        access_count=access,
        last_accessed_at=None
        if accessed_days_ago is None
        else NOW - timedelta(days=accessed_days_ago),
        expires_at=None if expires_in_days is None else NOW + timedelta(days=expires_in_days),
    )


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (RetentionPolicy(), None),
        (RetentionPolicy(default_days=90), 90),
        (RetentionPolicy(default_days=90, agents={"a": AgentRetention(default_days=30)}), 30),
        (
            RetentionPolicy(
                default_days=90,
                categories={EPI: 7},
                agents={"a": AgentRetention(default_days=30)},
            ),
            7,  # company per-category beats agent default
        ),
        (
            RetentionPolicy(
                categories={EPI: 7},
                agents={"a": AgentRetention(default_days=30, categories={EPI: 3})},
            ),
            3,  # agent per-category beats everything
        ),
    ],
)
def test_rule_resolution_order(policy: RetentionPolicy, expected: int | None) -> None:
    age = policy.max_age("a", EPI)
    assert age == (None if expected is None else timedelta(days=expected))
    # Another agent never gets agent a's overrides.
    other = policy.max_age("b", EPI)
    company = policy.categories.get(EPI, policy.default_days)
    assert other == (None if company is None else timedelta(days=company))


def test_expired_by_rule_and_by_expires_at() -> None:
    policy = RetentionPolicy(categories={EPI: 7})
    entries = [
        entry(1, age_days=10, category=EPI),
        entry(2, age_days=3, category=EPI),
        entry(3, age_days=400, category=SEM),  # no rule for semantic: forever
        entry(4, age_days=1, expires_in_days=-0.5),
    ]
    assert expired_ids(entries, policy, NOW) == ["m001", "m004"]


def test_score_decays_with_time_and_is_boosted_by_access_and_importance() -> None:
    fresh, old = entry(1, age_days=0), entry(2, age_days=30)
    assert retention_score(fresh, NOW) == pytest.approx(1.0)
    assert retention_score(old, NOW) < retention_score(entry(3, age_days=10), NOW)
    used = entry(4, age_days=30, access=20, accessed_days_ago=30)
    assert retention_score(used, NOW) > retention_score(old, NOW)
    recalled = entry(5, age_days=30, access=1, accessed_days_ago=1)
    assert retention_score(recalled, NOW) > retention_score(old, NOW)
    important = entry(6, age_days=30, importance=1.0)
    assert retention_score(important, NOW) > retention_score(old, NOW)


def test_caps_evict_the_weakest_per_category_then_per_agent() -> None:
    entries = [entry(i, age_days=i, category=EPI) for i in range(1, 6)] + [
        entry(10 + i, age_days=i + 3, category=SEM) for i in range(1, 4)
    ]
    policy = RetentionPolicy(max_per_category={EPI: 3}, max_memories_per_agent=5)
    evicted = select_evictions(entries, policy, NOW)
    # Episodic: the two oldest go; then 6 remain for a cap of 5: the oldest semantic goes.
    assert evicted == ["m005", "m004", "m013"]
    assert select_evictions(entries, RetentionPolicy(), NOW) == []


def test_big_caps_evict_down_to_a_margin_so_the_next_writes_do_not_scan() -> None:
    entries = [entry(i, age_days=i % 50, category=EPI) for i in range(1, 102)]  # 101 entries
    policy = RetentionPolicy(max_memories_per_agent=100)
    evicted = select_evictions(entries, policy, NOW)
    # 100 * 5% = 5 of slack: down to 95, the weakest (oldest) first.
    assert len(evicted) == 6
    kept = [e for e in entries if e.id not in set(evicted)]
    assert len(kept) == policy.cap_target(100) == 95
    assert min(NOW - e.created_at for e in entries if e.id in set(evicted)) >= max(
        NOW - e.created_at for e in kept
    )
    # Under the cap again: the next writes evict nothing until it is exceeded once more.
    assert select_evictions(kept + entries[:5], policy, NOW) == []
    assert RetentionPolicy(max_memories_per_agent=100, eviction_margin=0).cap_target(100) == 100
    assert RetentionPolicy(max_memories_per_agent=19).cap_target(19) == 19
