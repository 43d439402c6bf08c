"""Joining candidate sets of one store and query (``memvault._search``)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memvault._search import add_candidates, merge_candidates
from memvault.models import CandidateSet, MemoryCategory, MemoryEntry

NOW = datetime(2026, 6, 15, tzinfo=UTC)


def entry(i: str) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="a",
        category=MemoryCategory.EPISODIC,
        content=i,
        created_at=NOW,
        updated_at=NOW,
    )


def cset(dense: list[tuple[str, float]], lexical: list[tuple[str, float]]) -> CandidateSet:
    ids = {i for i, _ in dense} | {i for i, _ in lexical}
    return CandidateSet(
        dense=dense,
        lexical=lexical,
        entries={i: entry(i) for i in ids},
        vectors={i: np.full(2, 0.5, dtype=np.float32) for i in ids},
        analysed={i: i for i in ids},
    )


def test_added_candidates_join_in_score_order_without_repeats() -> None:
    base = cset([("a", 0.9), ("b", 0.5)], [("a", 7.0)])
    # A narrower search of the same query (the period's memories): one already held, two new.
    extra = cset([("b", 0.5), ("c", 0.7), ("d", 0.1)], [("c", 3.0), ("e", 9.0)])
    add_candidates(base, extra)
    assert base.dense == [("a", 0.9), ("c", 0.7), ("b", 0.5), ("d", 0.1)]
    assert base.lexical == [("e", 9.0), ("a", 7.0), ("c", 3.0)]
    assert set(base.entries) == set(base.vectors) == set(base.analysed) == set("abcde")


def test_adding_nothing_new_changes_nothing() -> None:
    base = cset([("a", 0.9)], [("a", 7.0)])
    add_candidates(base, cset([("a", 0.9)], []))
    assert base.dense == [("a", 0.9)] and base.lexical == [("a", 7.0)]


def test_merged_disjoint_scopes_keep_the_top_pool_of_each_list() -> None:
    mine = cset([("a", 0.9), ("b", 0.2)], [("a", 5.0)])
    shared = cset([("s", 0.5)], [("s", 6.0), ("t", 1.0)])
    out = merge_candidates([mine, shared], pool=2)
    assert out.dense == [("a", 0.9), ("s", 0.5)]
    assert out.lexical == [("s", 6.0), ("a", 5.0)]
