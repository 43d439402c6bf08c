from __future__ import annotations

import random
from datetime import timedelta

import pytest

from memvault.consolidation import (
    ConsolidationSelector,
    HighestRelevanceSelector,
    eligible_entries,
)
from memvault.models import MemoryCategory, MemoryScope

EPISODIC = MemoryCategory.EPISODIC
SEMANTIC = MemoryCategory.SEMANTIC


def test_group_below_threshold_is_not_selected(make_entry, now) -> None:
    entries = [make_entry("s1"), make_entry("s2")]
    assert HighestRelevanceSelector().select(entries, agent_id="dev-1", now=now) == []


def test_group_at_threshold_keeps_most_important_and_merges_rest(make_entry, now) -> None:
    entries = [
        make_entry("s1", importance=0.2, age_days=3),
        make_entry("s2", importance=0.9, age_days=2),
        make_entry("s3", importance=0.4, age_days=1),
    ]
    (group,) = HighestRelevanceSelector().select(entries, agent_id="dev-1", now=now)
    assert group.category is SEMANTIC
    assert [e.id for e in group.keep] == ["s2"]
    # merged entries come oldest first
    assert [e.id for e in group.merge] == ["s1", "s3"]


def test_custom_threshold_and_keep(make_entry, now) -> None:
    entries = [make_entry(f"s{i}", importance=i / 10, age_days=10 - i) for i in range(5)]
    selector = HighestRelevanceSelector(group_threshold=5, keep=2)
    (group,) = selector.select(entries, agent_id="dev-1", now=now)
    assert {e.id for e in group.keep} == {"s4", "s3"}
    assert (
        HighestRelevanceSelector(group_threshold=6).select(entries, agent_id="dev-1", now=now) == []
    )


def test_ties_broken_by_access_count_then_recency(make_entry, now) -> None:
    by_access = [
        make_entry("a", access_count=1, age_days=1),
        make_entry("b", access_count=7, age_days=5),
        make_entry("c", access_count=1, age_days=2),
    ]
    (group,) = HighestRelevanceSelector().select(by_access, agent_id="dev-1", now=now)
    assert [e.id for e in group.keep] == ["b"]
    by_recency = [
        make_entry("a", age_days=3),
        make_entry("b", age_days=1),
        make_entry("c", age_days=2),
    ]
    (group,) = HighestRelevanceSelector().select(by_recency, agent_id="dev-1", now=now)
    assert [e.id for e in group.keep] == ["b"]


def test_search_relevance_score_wins_over_importance(make_entry, now) -> None:
    entries = [
        make_entry("a", importance=1.0, relevance_score=0.1),
        make_entry("b", importance=0.0, relevance_score=0.9),
        make_entry("c", importance=0.5, relevance_score=0.5),
    ]
    (group,) = HighestRelevanceSelector().select(entries, agent_id="dev-1", now=now)
    assert [e.id for e in group.keep] == ["b"]


def test_selection_is_deterministic_under_input_order(make_entry, now) -> None:
    entries = [
        make_entry(f"{cat.value[:3]}{i}", category=cat, importance=0.5, age_days=1)
        for cat in (SEMANTIC, EPISODIC)
        for i in range(4)
    ]
    expected = HighestRelevanceSelector().select(entries, agent_id="dev-1", now=now)
    for seed in range(5):
        shuffled = entries[:]
        random.Random(seed).shuffle(shuffled)
        assert HighestRelevanceSelector().select(shuffled, agent_id="dev-1", now=now) == expected
    # groups come in category declaration order; full ties keep the highest id
    assert [g.category for g in expected] == [EPISODIC, SEMANTIC]
    assert [e.id for e in expected[1].keep] == ["sem3"]


def test_only_live_private_unconsolidated_entries_of_the_agent(make_entry, now) -> None:
    entries = [
        make_entry("ok1"),
        make_entry("ok2"),
        make_entry("other", agent_id="dev-2"),
        make_entry("shared", scope=MemoryScope.SHARED),
        make_entry("done", consolidated_at=now - timedelta(hours=1)),
        make_entry("expired", expires_at=now - timedelta(seconds=1)),
        make_entry("superseded", superseded_by="ok1"),
        make_entry("retracted", retracted_at=now - timedelta(days=1)),
        make_entry("ok1"),  # duplicate id
    ]
    assert [e.id for e in eligible_entries(entries, agent_id="dev-1", now=now)] == ["ok1", "ok2"]
    assert HighestRelevanceSelector().select(entries, agent_id="dev-1", now=now) == []


def test_categories_filter(make_entry, now) -> None:
    entries = [make_entry(f"e{i}", category=EPISODIC) for i in range(3)]
    entries += [make_entry(f"s{i}") for i in range(3)]
    selector = HighestRelevanceSelector(categories=frozenset({SEMANTIC}))
    assert [g.category for g in selector.select(entries, agent_id="dev-1", now=now)] == [SEMANTIC]


@pytest.mark.parametrize(("threshold", "keep"), [(1, 0), (3, 3), (3, -1)])
def test_invalid_settings_rejected(threshold: int, keep: int) -> None:
    with pytest.raises(ValueError):
        HighestRelevanceSelector(group_threshold=threshold, keep=keep)


def test_satisfies_protocol() -> None:
    assert isinstance(HighestRelevanceSelector(), ConsolidationSelector)


def test_naive_now_rejected(make_entry) -> None:
    from datetime import datetime

    with pytest.raises(ValueError, match="naive"):
        HighestRelevanceSelector().select(
            [make_entry("a")], agent_id="dev-1", now=datetime(2026, 1, 1)
        )


def test_max_group_size_splits_evenly_oldest_first(make_entry, now) -> None:
    entries = [make_entry(f"s{i}", importance=0.1, age_days=20 - i) for i in range(7)]
    entries.append(make_entry("best", importance=0.9))
    groups = HighestRelevanceSelector(max_group_size=5).select(entries, agent_id="dev-1", now=now)
    assert [[e.id for e in g.merge] for g in groups] == [
        ["s0", "s1", "s2", "s3"],
        ["s4", "s5", "s6"],
    ]
    assert [e.id for e in groups[0].keep] == ["best"] and groups[1].keep == ()


def test_chunk_evenly_never_leaves_a_lone_entry(make_entry) -> None:
    from memvault.consolidation.selectors import chunk_evenly

    items = [make_entry(f"s{i}") for i in range(11)]
    assert [len(c) for c in chunk_evenly(items, 5)] == [4, 4, 3]
    assert [len(c) for c in chunk_evenly(items[:6], 5)] == [3, 3]
    assert [len(c) for c in chunk_evenly(items[:5], 5)] == [5]
    assert chunk_evenly([], 5) == []
    with pytest.raises(ValueError):
        HighestRelevanceSelector(max_group_size=1)


def test_with_vectors_similar_entries_share_a_group(make_entry, now) -> None:
    from memvault.consolidation.selectors import group_by_similarity

    # Two topics interleaved in time: grouping by time would mix them, by vector it does not.
    entries = [make_entry(f"e{i}", age_days=30 - i) for i in range(8)]
    topic = {e.id: (1.0, 0.0) if i % 2 == 0 else (0.0, 1.0) for i, e in enumerate(entries)}
    runs = group_by_similarity(entries, 4, topic)
    assert [[e.id for e in run] for run in runs] == [
        ["e0", "e2", "e4", "e6"],
        ["e1", "e3", "e5", "e7"],
    ]
    assert group_by_similarity(entries, 4, topic) == runs  # deterministic
    # Entries without a vector come after, in runs of their own.
    partial = {k: v for k, v in topic.items() if k != "e7"}
    runs = group_by_similarity(entries, 4, partial)
    assert [e.id for e in runs[-1]] == ["e7"] and sum(len(r) for r in runs) == 8
    selector = HighestRelevanceSelector(keep=0, max_group_size=4, vectors=topic)
    groups = selector.select(entries, agent_id="dev-1", now=now)
    assert [[e.id for e in g.merge] for g in groups] == [
        ["e0", "e2", "e4", "e6"],
        ["e1", "e3", "e5", "e7"],
    ]
