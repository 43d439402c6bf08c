"""MMR diversity re-ranking: bigram Jaccard, cosine and custom similarities."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from memvault.models import MemoryCategory, MemoryEntry, ScoreBreakdown
from memvault.retrieval import diversity
from memvault.retrieval.diversity import bigram_jaccard, mmr, word_bigrams

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def entry(
    i: str, content: str, score: float | None, breakdown: ScoreBreakdown | None = None
) -> MemoryEntry:
    return MemoryEntry(
        id=i,
        agent_id="dev-1",
        category=MemoryCategory.SEMANTIC,
        content=content,
        created_at=NOW,
        updated_at=NOW,
        relevance_score=score,
        score=breakdown,
    )


LITESTAR = "We prefer Litestar over Flask for new services because of typed handlers"
LITESTAR_AGAIN = "We prefer Litestar over Flask for new services because of its typed handlers"
POSTGRES = "Production runs PostgreSQL 16 with pgvector for the search index"
DEPLOY = "Deploys on Friday afternoons are banned after the March outage"

CANDIDATES = [
    entry("a", LITESTAR, 0.90),
    entry("a2", LITESTAR_AGAIN, 0.88),
    entry("b", POSTGRES, 0.60),
    entry("c", DEPLOY, 0.58),
]


def ids(entries: list[MemoryEntry]) -> list[str]:
    return [e.id for e in entries]


# -- similarity -----------------------------------------------------------------------------------


def test_word_bigrams_are_lowercased_word_pairs() -> None:
    assert word_bigrams("Prefers dark-mode, always!") == {
        ("prefers", "dark"),
        ("dark", "mode"),
        ("mode", "always"),
    }
    assert word_bigrams("Hello") == {("hello",)}
    assert word_bigrams("  ... ") == frozenset()


def test_bigram_jaccard() -> None:
    assert bigram_jaccard(LITESTAR, LITESTAR.upper()) == 1.0
    assert bigram_jaccard(LITESTAR, POSTGRES) == 0.0
    assert bigram_jaccard("a b c", "a b d") == pytest.approx(1 / 3)
    assert bigram_jaccard("", "") == 0.0
    assert bigram_jaccard("yes", "yes") == 1.0
    assert 0.6 < bigram_jaccard(LITESTAR, LITESTAR_AGAIN) < 1.0


# -- mmr ------------------------------------------------------------------------------------------


def test_mmr_demotes_a_near_duplicate_below_a_diverse_entry() -> None:
    out = mmr(CANDIDATES, lambda_=0.7)
    assert ids(out) == ["a", "b", "c", "a2"]
    assert ids(mmr(CANDIDATES, lambda_=0.7, k=3)) == ["a", "b", "c"]


def test_mmr_penalty_is_recorded_and_relevance_is_unchanged() -> None:
    out = {e.id: e for e in mmr(CANDIDATES, lambda_=0.7)}
    for original in CANDIDATES:
        assert out[original.id].relevance_score == original.relevance_score
        assert out[original.id].content == original.content
    assert out["a"].score == ScoreBreakdown(final=0.90, mmr_penalty=0.0)
    sim = bigram_jaccard(LITESTAR, LITESTAR_AGAIN)
    assert out["a2"].score is not None
    assert out["a2"].score.mmr_penalty == pytest.approx(0.3 * sim)
    assert out["b"].score is not None
    assert out["b"].score.mmr_penalty == 0.0  # nothing selected before it resembles it


def test_mmr_keeps_an_existing_breakdown() -> None:
    breakdown = ScoreBreakdown(dense=0.8, bm25=3.2, fused=0.9, final=0.9)
    items = [entry("a", LITESTAR, 0.9, breakdown), entry("b", LITESTAR_AGAIN, 0.8, breakdown)]
    out = mmr(items, lambda_=0.5)
    assert out[1].score is not None
    assert out[1].score.model_dump(exclude={"mmr_penalty"}) == breakdown.model_dump(
        exclude={"mmr_penalty"}
    )
    assert out[1].score.mmr_penalty > 0
    assert items[1].score == breakdown  # inputs are never mutated


def test_lambda_one_returns_the_input_order_exactly() -> None:
    unsorted = [CANDIDATES[2], CANDIDATES[0], CANDIDATES[3], CANDIDATES[1]]
    out = mmr(unsorted, lambda_=1.0)
    assert ids(out) == ids(unsorted)
    assert all(e.score is not None and e.score.mmr_penalty == 0.0 for e in out)
    assert ids(mmr(unsorted, lambda_=1.0, k=2)) == ids(unsorted[:2])


def test_lambda_zero_is_pure_diversity() -> None:
    items = [
        entry("x1", "alpha beta gamma delta", 0.9),
        entry("x2", "alpha beta gamma delta epsilon", 0.8),
        entry("y", "zeta eta theta", 0.1),
    ]
    # The first pick is a tie at 0 and goes to the earliest; then the least similar wins.
    assert ids(mmr(items, lambda_=0.0)) == ["x1", "y", "x2"]


def test_ties_keep_the_input_order() -> None:
    items = [entry(str(i), f"topic{i} words here", 0.5) for i in range(5)]
    assert ids(mmr(items, lambda_=0.7)) == ["0", "1", "2", "3", "4"]


def test_missing_relevance_counts_as_zero() -> None:
    items = [entry("n", POSTGRES, None), entry("s", DEPLOY, 0.2)]
    out = mmr(items, lambda_=0.7)
    assert ids(out) == ["s", "n"]
    assert out[1].relevance_score is None
    assert out[1].score == ScoreBreakdown(final=0.0)


def test_k_bounds() -> None:
    assert mmr(CANDIDATES, k=0) == []
    assert len(mmr(CANDIDATES, k=99)) == len(CANDIDATES)
    assert mmr([], k=5) == []
    with pytest.raises(ValueError, match="k must be >= 0"):
        mmr(CANDIDATES, k=-1)


@pytest.mark.parametrize("bad", [-0.1, 1.01, math.nan, math.inf])
def test_lambda_outside_unit_interval_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mmr(CANDIDATES, lambda_=bad)


def test_lambda_must_be_a_number() -> None:
    with pytest.raises(TypeError):
        mmr(CANDIDATES, lambda_="0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        mmr(CANDIDATES, lambda_=True)


def test_unknown_similarity_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown mmr similarity"):
        mmr(CANDIDATES, similarity="jaccard")  # type: ignore[arg-type]


def test_bigram_sets_are_computed_once_per_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = diversity.word_bigrams

    def counting(text: str) -> frozenset[tuple[str, ...]]:
        calls.append(text)
        return real(text)

    monkeypatch.setattr(diversity, "word_bigrams", counting)
    many = [
        entry(str(i), f"memory {i} about topic {i % 7} and more", 1 - i / 100) for i in range(40)
    ]
    mmr(many, lambda_=0.5, k=10)
    assert len(calls) == len(many)


def test_similarity_is_evaluated_at_most_n_times_k() -> None:
    pairs: list[tuple[str, str]] = []

    def sim(a: MemoryEntry, b: MemoryEntry) -> float:
        pairs.append((a.id, b.id))
        return 0.0

    many = [entry(str(i), "text", 1 - i / 100) for i in range(30)]
    assert ids(mmr(many, lambda_=0.5, k=5, similarity=sim)) == ["0", "1", "2", "3", "4"]
    # Each pick compares only the remaining candidates with the newest selection.
    assert len(pairs) == 29 + 28 + 27 + 26
    assert len(set(pairs)) == len(pairs)


def test_custom_similarity_function() -> None:
    same_topic = {("a", "b"): 1.0, ("b", "a"): 1.0}

    def sim(x: MemoryEntry, y: MemoryEntry) -> float:
        return same_topic.get((x.id, y.id), 0.0)

    items = [entry("a", "one", 0.9), entry("b", "two", 0.85), entry("c", "three", 0.7)]
    out = mmr(items, lambda_=0.6, similarity=sim)
    assert ids(out) == ["a", "c", "b"]
    assert out[2].score is not None
    assert out[2].score.mmr_penalty == pytest.approx(0.4)


# -- cosine ---------------------------------------------------------------------------------------


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_cosine_demotes_semantic_duplicates_that_share_no_bigrams() -> None:
    items = [
        entry("a", "The API is written with Litestar", 0.9),
        entry("a2", "Our web framework of choice: Litestar", 0.85),
        entry("b", "Database is PostgreSQL", 0.6),
    ]
    vectors = {"a": unit(1, 0.05, 0), "a2": unit(1, 0.1, 0), "b": unit(0, 0, 1)}
    assert ids(mmr(items, lambda_=0.7)) == ["a", "a2", "b"]  # bigrams see no overlap
    out = mmr(items, lambda_=0.7, similarity="cosine", vectors=vectors)
    assert ids(out) == ["a", "b", "a2"]
    assert out[2].score is not None
    expected = float(vectors["a2"] @ vectors["a"])
    assert out[2].score.mmr_penalty == pytest.approx(0.3 * expected, rel=1e-5)


def test_cosine_normalises_vectors_and_clips_negative_similarity() -> None:
    items = [entry("a", "x", 0.9), entry("b", "y", 0.8), entry("c", "z", 0.7)]
    vectors = {
        "a": np.array([3.0, 0.0]),
        "b": np.array([-5.0, 0.0]),  # opposite: no bonus, penalty 0
        "c": np.array([0.0, 0.0]),  # zero vector: similar to nothing
    }
    out = mmr(items, lambda_=0.5, similarity="cosine", vectors=vectors)
    assert ids(out) == ["a", "b", "c"]
    assert all(e.score is not None and e.score.mmr_penalty == 0.0 for e in out)


def test_cosine_needs_a_vector_for_every_entry() -> None:
    with pytest.raises(ValueError, match="needs vectors"):
        mmr(CANDIDATES, similarity="cosine")
    with pytest.raises(ValueError, match="missing for: a2"):
        mmr(
            CANDIDATES,
            similarity="cosine",
            vectors={"a": unit(1, 0), "b": unit(0, 1), "c": unit(1, 1)},
        )
    with pytest.raises(ValueError, match="one dimension"):
        mmr(
            CANDIDATES[:2],
            similarity="cosine",
            vectors={"a": unit(1, 0), "a2": unit(1, 0, 0)},
        )
