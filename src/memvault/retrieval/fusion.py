"""Reciprocal Rank Fusion of ranked candidate lists."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["min_max", "rrf"]


def rrf(
    lists: Sequence[Sequence[str]], *, k: int = 60, weights: Sequence[float] | None = None
) -> dict[str, float]:
    """Fuse ranked id lists: ``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks.

    Raises:
        ValueError: ``k`` is negative or ``weights`` does not match ``lists``.
    """
    if k < 0:
        msg = f"rrf k must be >= 0, got {k}"
        raise ValueError(msg)
    if weights is not None and len(weights) != len(lists):
        msg = "rrf weights must have one weight per list"
        raise ValueError(msg)
    scores: dict[str, float] = {}
    for i, ranked in enumerate(lists):
        w = 1.0 if weights is None else weights[i]
        for rank, doc_id in enumerate(ranked, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + w / (k + rank)
    return scores


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """Scale scores to [0, 1]; a single value (or all equal) maps to 1.0."""
    if not scores:
        return {}
    lo = min(scores.values())
    hi = max(scores.values())
    if hi - lo <= 1e-12:
        return dict.fromkeys(scores, 1.0)
    span = hi - lo
    return {doc_id: (s - lo) / span for doc_id, s in scores.items()}
