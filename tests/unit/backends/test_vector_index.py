"""The in-process vector matrix: growth, tombstones, compaction, masks."""

from __future__ import annotations

import numpy as np
import pytest

from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexRow


def rows(start: int, n: int, *, category: int = 0) -> list[IndexRow]:
    return [
        IndexRow(
            rowid=start + i,
            category=category,
            created_us=1000 + start + i,
            start_us=1000 + start + i,
            valid_to_us=NEVER,
            expires_us=NEVER,
            superseded=False,
        )
        for i in range(n)
    ]


def unit(rng: np.random.Generator, n: int, d: int = 8) -> np.ndarray:
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def full_mask(index: AgentIndex) -> np.ndarray:
    return index.mask(
        now_us=0,
        categories=None,
        since_us=None,
        until_us=None,
        as_of_us=None,
        include_superseded=False,
        allowed_rowids=None,
    )


def test_search_matches_brute_force_after_growth_and_deletes() -> None:
    rng = np.random.default_rng(7)
    index = AgentIndex(8, capacity=4)
    vecs = unit(rng, 300)
    for start in range(0, 300, 37):
        chunk = vecs[start : start + 37]
        index.add(rows(start, len(chunk)), chunk)
    deleted = list(range(0, 300, 3))
    index.remove(deleted)
    assert len(index) == 200
    q = unit(rng, 1)[0]
    got = index.search(q, full_mask(index), 10)
    alive = [i for i in range(300) if i % 3]
    scores = vecs[alive] @ q
    expected = [alive[i] for i in np.argsort(-scores)[:10]]
    assert [r for r, _ in got] == expected
    assert all(r % 3 for r, _ in got)


def test_masks_filter_category_time_and_supersession() -> None:
    rng = np.random.default_rng(1)
    index = AgentIndex(8)
    index.add(rows(0, 5, category=1), unit(rng, 5))
    index.add(rows(5, 5, category=2), unit(rng, 5))
    index.supersede(6, valid_to_us=2000)
    q = unit(rng, 1)[0]
    m = index.mask(
        now_us=5000,
        categories=[2],
        since_us=None,
        until_us=None,
        as_of_us=None,
        include_superseded=False,
        allowed_rowids=None,
    )
    assert sorted(r for r, _ in index.search(q, m, 10)) == [5, 7, 8, 9]
    m = index.mask(
        now_us=5000,
        categories=None,
        since_us=1002,
        until_us=1004,
        as_of_us=None,
        include_superseded=True,
        allowed_rowids=np.array([3, 4, 99], dtype=np.int64),
    )
    assert sorted(r for r, _ in index.search(q, m, 10)) == [3, 4]


def test_empty_and_fully_deleted_index_returns_nothing() -> None:
    index = AgentIndex(8)
    q = np.ones(8, dtype=np.float32) / np.sqrt(8)
    assert index.search(q, full_mask(index), 5) == []
    index.add(rows(0, 3), np.tile(q, (3, 1)))
    index.remove([0, 1, 2])
    assert len(index) == 0
    assert index.search(q, full_mask(index), 5) == []
    index.add(rows(10, 1), q[None, :])
    assert [r for r, _ in index.search(q, full_mask(index), 5)] == [10]


def test_a_selective_filter_scores_only_its_rows_and_finds_the_same_top() -> None:
    rng = np.random.default_rng(12)
    index = AgentIndex(8)
    vecs = unit(rng, 2000)
    index.add(rows(1, 1900), vecs[:1900])
    index.add(rows(5000, 100, category=3), vecs[1900:])  # a rare category: 5% of the rows
    q = unit(rng, 1)[0]
    rare = index.mask(
        now_us=0,
        categories=[3],
        since_us=None,
        until_us=None,
        as_of_us=None,
        include_superseded=False,
        allowed_rowids=None,
    )
    got = index.search(q, rare, 7)
    sims = vecs[1900:] @ q
    best = np.argsort(-sims)[:7]
    assert [r for r, _ in got] == [5000 + int(i) for i in best]
    assert [s for _, s in got] == pytest.approx([float(sims[i]) for i in best], rel=1e-5)
    assert len(index.search(q, rare, 500)) == 100  # never more than the rows that pass
