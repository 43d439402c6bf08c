"""Retrieval metrics: pure functions over a gold set and a ranked list of ids.

Relevance is binary: an id is relevant when it is in the gold set. A ranked list may repeat an
id (LongMemEval maps several retrieved turns to one session); every function counts an id at
its first position only, so a repeated hit never scores twice.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Summary",
    "aggregate",
    "mrr",
    "ndcg_at_k",
    "percentile",
    "recall_at_k",
    "summarize",
]


def _check(gold: Collection[Hashable], k: int | None = None) -> None:
    if not gold:
        msg = "the gold set is empty: the metric is undefined (skip the question)"
        raise ValueError(msg)
    if k is not None and k < 1:
        msg = f"k must be >= 1, got {k}"
        raise ValueError(msg)


def recall_at_k(gold: Collection[Hashable], ranked: Sequence[Hashable], k: int) -> float:
    """Return ``|gold ∩ ranked[:k]| / |gold|``, the share of gold ids in the first ``k`` results.

    Raises:
        ValueError: ``gold`` is empty or ``k < 1``.
    """
    _check(gold, k)
    gold_set = set(gold)
    return len(gold_set.intersection(ranked[:k])) / len(gold_set)


def ndcg_at_k(gold: Collection[Hashable], ranked: Sequence[Hashable], k: int = 10) -> float:
    """Return the normalised discounted cumulative gain at ``k`` with binary relevance.

    ``DCG = Σ 1/log2(rank + 1)`` over the gold ids in the first ``k`` results (each counted at its
    first position); the ideal DCG puts ``min(|gold|, k)`` gold ids at the top.

    Raises:
        ValueError: ``gold`` is empty or ``k < 1``.
    """
    _check(gold, k)
    gold_set = set(gold)
    seen: set[Hashable] = set()
    dcg = 0.0
    for rank, item in enumerate(ranked[:k], start=1):
        if item in gold_set and item not in seen:
            seen.add(item)
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def mrr(gold: Collection[Hashable], ranked: Sequence[Hashable]) -> float:
    """Return the reciprocal rank of the first gold id in ``ranked`` (0 when none is there).

    Raises:
        ValueError: ``gold`` is empty.
    """
    _check(gold)
    gold_set = set(gold)
    for rank, item in enumerate(ranked, start=1):
        if item in gold_set:
            return 1.0 / rank
    return 0.0


def percentile(values: Iterable[float], q: float) -> float:
    """Return the ``q``-th percentile (0-100), interpolating linearly between ranks like numpy.

    Raises:
        ValueError: no values, or ``q`` outside [0, 100].
    """
    data = sorted(values)
    if not data:
        msg = "percentile of no values"
        raise ValueError(msg)
    if not 0.0 <= q <= 100.0:
        msg = f"percentile q must be in [0, 100], got {q}"
        raise ValueError(msg)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """Holds the mean of every metric over a group of questions.

    ``questions`` counts the questions of the group; ``counts[m]`` how many of them have metric
    ``m`` (a question may lack one, e.g. no evidence turns), and ``means[m]`` is None when none
    has it.
    """

    questions: int
    means: dict[str, float | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def summarize(scores: Iterable[Mapping[str, float]], metric_names: Sequence[str]) -> Summary:
    """Average each metric over the per-question ``scores`` that have it (a macro average).

    Raises:
        ValueError: a score names a metric not in ``metric_names``.
    """
    totals = dict.fromkeys(metric_names, 0.0)
    counts = dict.fromkeys(metric_names, 0)
    questions = 0
    for score in scores:
        questions += 1
        for name, value in score.items():
            if name not in totals:
                msg = f"unknown metric {name!r} (expected one of {list(metric_names)})"
                raise ValueError(msg)
            totals[name] += value
            counts[name] += 1
    means: dict[str, float | None] = {
        name: (totals[name] / counts[name] if counts[name] else None) for name in metric_names
    }
    return Summary(questions=questions, means=means, counts=counts)


def aggregate(
    scores: Iterable[tuple[str, Mapping[str, float]]],
    metric_names: Sequence[str],
    groups: Sequence[str] = (),
) -> tuple[dict[str, Summary], Summary]:
    """Summaries per group and overall from ``(group, per-question scores)`` pairs.

    The overall summary averages over questions (not over groups), so a large group weighs in
    proportion to its size. ``groups`` lists groups to report in that order even when empty;
    other groups follow in first-seen order.
    """
    by_group: dict[str, list[Mapping[str, float]]] = {g: [] for g in groups}
    every: list[Mapping[str, float]] = []
    for group, score in scores:
        by_group.setdefault(group, []).append(score)
        every.append(score)
    per_group = {g: summarize(rows, metric_names) for g, rows in by_group.items()}
    return per_group, summarize(every, metric_names)
