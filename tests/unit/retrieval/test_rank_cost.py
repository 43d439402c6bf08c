"""Ranking does its per-candidate work once (cost guards of the search hot path)."""

from __future__ import annotations

from collections import Counter

from memvault.retrieval.pipeline import spread_threads


def test_spread_threads_asks_each_candidates_thread_once() -> None:
    ranked = [(f"e{i}", 1.0 - i / 100) for i in range(40)]
    thread = {f"e{i}": f"t{i % 3}" for i in range(40)}
    asked: Counter[str] = Counter()

    def thread_of(entry_id: str) -> str:
        asked[entry_id] += 1
        return thread[entry_id]

    order = spread_threads(ranked, thread_of, penalty=0.5, k=10, pool=30)
    assert max(asked.values()) == 1
    assert set(asked) == {f"e{i}" for i in range(30)}  # only the pool is looked at
    # The spread itself: the first three picks come from three different threads.
    assert {thread[i] for i in order[:3]} == {"t0", "t1", "t2"}
    assert sorted(order) == sorted(i for i, _ in ranked)
