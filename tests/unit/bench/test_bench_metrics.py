"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from memvault.bench.metrics import (
    aggregate,
    mrr,
    ndcg_at_k,
    percentile,
    recall_at_k,
    summarize,
)

LOG3 = math.log2(3)
LOG5 = math.log2(5)


class TestRecall:
    def test_share_of_gold_in_the_first_k(self) -> None:
        ranked = ["x", "a", "y", "b"]
        assert recall_at_k({"a", "b"}, ranked, 1) == 0.0
        assert recall_at_k({"a", "b"}, ranked, 2) == 0.5
        assert recall_at_k({"a", "b"}, ranked, 3) == 0.5
        assert recall_at_k({"a", "b"}, ranked, 4) == 1.0

    def test_k_beyond_the_list_and_gold_never_retrieved(self) -> None:
        assert recall_at_k({"a", "b", "c"}, ["a"], 50) == pytest.approx(1 / 3)
        assert recall_at_k({"z"}, ["a", "b"], 10) == 0.0
        assert recall_at_k({"z"}, [], 10) == 0.0

    def test_repeated_ids_count_once(self) -> None:
        # LongMemEval: two turns of one session in the top k retrieve that session once.
        assert recall_at_k(["s1", "s2"], ["s1", "s1", "s3"], 3) == 0.5

    def test_gold_given_as_a_list_with_duplicates(self) -> None:
        assert recall_at_k(["a", "a", "b"], ["a"], 1) == 0.5

    @pytest.mark.parametrize("k", [0, -1])
    def test_k_must_be_positive(self, k: int) -> None:
        with pytest.raises(ValueError, match="k must be >= 1"):
            recall_at_k({"a"}, ["a"], k)

    def test_empty_gold_is_undefined(self) -> None:
        with pytest.raises(ValueError, match="gold set is empty"):
            recall_at_k(set(), ["a"], 1)


class TestNdcg:
    def test_hand_computed_example(self) -> None:
        # DCG = 1/log2(3) + 1/log2(5) (hits at ranks 2 and 4); IDCG = 1 + 1/log2(3).
        expected = (1 / LOG3 + 1 / LOG5) / (1 + 1 / LOG3)
        assert ndcg_at_k({"a", "b"}, ["x", "a", "y", "b"], 10) == pytest.approx(expected)
        assert expected == pytest.approx(0.650921, abs=1e-6)

    def test_perfect_and_empty_rankings(self) -> None:
        assert ndcg_at_k({"a", "b"}, ["a", "b", "x"], 10) == pytest.approx(1.0)
        assert ndcg_at_k({"a", "b"}, ["b", "a"], 10) == pytest.approx(1.0)
        assert ndcg_at_k({"a"}, ["x", "y"], 10) == 0.0
        assert ndcg_at_k({"a"}, [], 10) == 0.0

    def test_ideal_dcg_is_over_min_of_gold_and_k(self) -> None:
        # Three gold ids but k=2: two hits at the top are already ideal.
        assert ndcg_at_k({"a", "b", "c"}, ["a", "b", "c"], 2) == pytest.approx(1.0)
        # One hit at rank 1 of three gold ids with k=10: 1 / (1 + 1/log2(3) + 1/log2(4)).
        assert ndcg_at_k({"a", "b", "c"}, ["a"], 10) == pytest.approx(1 / (1 + 1 / LOG3 + 0.5))

    def test_hits_beyond_k_do_not_count(self) -> None:
        assert ndcg_at_k({"a"}, ["x", "y", "a"], 2) == 0.0
        assert ndcg_at_k({"a"}, ["x", "y", "a"], 3) == pytest.approx(0.5)

    def test_a_repeated_hit_scores_once(self) -> None:
        assert ndcg_at_k({"a"}, ["a", "a", "a"], 10) == pytest.approx(1.0)
        assert ndcg_at_k({"a", "b"}, ["a", "a"], 10) == pytest.approx(1 / (1 + 1 / LOG3))

    def test_bounds(self) -> None:
        with pytest.raises(ValueError):
            ndcg_at_k(set(), ["a"], 10)
        with pytest.raises(ValueError):
            ndcg_at_k({"a"}, ["a"], 0)


class TestMrr:
    def test_reciprocal_rank_of_the_first_gold_id(self) -> None:
        assert mrr({"b"}, ["a", "c", "b"]) == pytest.approx(1 / 3)
        assert mrr({"a", "b"}, ["x", "b", "a"]) == pytest.approx(0.5)
        assert mrr({"a"}, ["a"]) == 1.0

    def test_zero_when_no_gold_id_was_retrieved(self) -> None:
        assert mrr({"z"}, ["a", "b"]) == 0.0
        assert mrr({"z"}, []) == 0.0

    def test_empty_gold_is_undefined(self) -> None:
        with pytest.raises(ValueError):
            mrr([], ["a"])


class TestPercentile:
    def test_linear_interpolation_like_numpy(self) -> None:
        values = [4.0, 1.0, 3.0, 2.0]
        assert percentile(values, 50) == pytest.approx(2.5)
        assert percentile(values, 95) == pytest.approx(3.85)
        assert percentile(values, 0) == 1.0
        assert percentile(values, 100) == 4.0
        assert percentile([7.0], 95) == 7.0
        assert percentile(range(1, 101), 50) == pytest.approx(50.5)

    def test_bad_input(self) -> None:
        with pytest.raises(ValueError, match="no values"):
            percentile([], 50)
        with pytest.raises(ValueError, match=r"\[0, 100\]"):
            percentile([1.0], 101)


class TestAggregation:
    NAMES = ("recall@1", "turn_recall@10")

    def test_macro_average_over_questions(self) -> None:
        scores = [
            ("a", {"recall@1": 1.0}),
            ("a", {"recall@1": 0.0}),
            ("b", {"recall@1": 1.0}),
        ]
        groups, overall = aggregate(scores, self.NAMES)
        assert groups["a"].questions == 2
        assert groups["a"].means["recall@1"] == pytest.approx(0.5)
        assert groups["b"].means["recall@1"] == pytest.approx(1.0)
        # Over questions (2/3), not the mean of the group means (0.75).
        assert overall.means["recall@1"] == pytest.approx(2 / 3)
        assert overall.questions == 3

    def test_metrics_missing_for_some_questions(self) -> None:
        scores = [
            ("a", {"recall@1": 1.0, "turn_recall@10": 0.5}),
            ("a", {"recall@1": 0.0}),
        ]
        _, overall = aggregate(scores, self.NAMES)
        assert overall.counts == {"recall@1": 2, "turn_recall@10": 1}
        assert overall.means["turn_recall@10"] == pytest.approx(0.5)

    def test_listed_groups_come_first_and_may_be_empty(self) -> None:
        groups, overall = aggregate([("b", {"recall@1": 1.0})], self.NAMES, groups=["a", "b"])
        assert list(groups) == ["a", "b"]
        assert groups["a"].questions == 0
        assert groups["a"].means == {"recall@1": None, "turn_recall@10": None}
        assert overall.means["turn_recall@10"] is None

    def test_unknown_metric_is_an_error(self) -> None:
        with pytest.raises(ValueError, match="unknown metric 'bogus'"):
            summarize([{"bogus": 1.0}], self.NAMES)
