"""Diversity re-ranking with Maximal Marginal Relevance (MMR).

Near-duplicate memories waste a prompt's budget on one fact. MMR picks results greedily, each time
the candidate with the best ``lambda * score - (1 - lambda) * max_sim_to_selected``, so a
candidate close to one already chosen drops behind a less similar one. ``lambda_ = 1.0`` is pure
relevance, ``0.0`` pure diversity.

It runs after the filter strategy (see :mod:`memvault.retrieval.filters`): an entry the filter
removed must not act as an anchor that suppresses similar, visible candidates.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from memvault.models import MemoryEntry, ScoreBreakdown

__all__ = [
    "Similarity",
    "SimilarityFn",
    "bigram_jaccard",
    "mmr",
    "word_bigrams",
]

SimilarityFn: TypeAlias = Callable[[MemoryEntry, MemoryEntry], float]
"""A similarity of two entries in [0, 1] (higher is more alike)."""

Similarity: TypeAlias = Literal["bigram", "cosine"] | SimilarityFn
"""How :func:`mmr` measures redundancy: a built-in name or a custom function."""

_WORD = re.compile(r"[^\W_]+")


def word_bigrams(text: str) -> frozenset[tuple[str, ...]]:
    """The set of lower-cased word bigrams of ``text``.

    A text of a single word yields that word as a one-tuple, so two one-word memories can still be
    compared (a unigram never equals a bigram, so it does not match longer texts by accident).
    """
    words = _WORD.findall(text.lower())
    if len(words) < 2:
        return frozenset((w,) for w in words)
    return frozenset(pairwise(words))


def _jaccard(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def bigram_jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the word-bigram sets of two texts (0.0 when either has no words)."""
    return _jaccard(word_bigrams(a), word_bigrams(b))


def _check_lambda(lambda_: float) -> float:
    if isinstance(lambda_, bool) or not isinstance(lambda_, int | float):
        msg = f"mmr lambda must be a number in [0, 1], got {lambda_!r}"
        raise TypeError(msg)
    if not math.isfinite(lambda_) or not 0.0 <= lambda_ <= 1.0:
        msg = f"mmr lambda must be in [0, 1], got {lambda_!r}"
        raise ValueError(msg)
    return float(lambda_)


def _with_penalty(entry: MemoryEntry, penalty: float) -> MemoryEntry:
    score = entry.score
    if score is None:
        # Results without an explain breakdown still get one, so the penalty is never lost;
        # ``final`` mirrors the unchanged relevance score.
        score = ScoreBreakdown(final=entry.relevance_score or 0.0)
    return entry.model_copy(update={"score": score.model_copy(update={"mmr_penalty": penalty})})


def _unit_rows(
    entries: Sequence[MemoryEntry], vectors: Mapping[str, object]
) -> NDArray[np.float64]:
    missing = [e.id for e in entries if e.id not in vectors]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        msg = f"cosine similarity needs a vector for every entry; missing for: {shown}"
        raise ValueError(msg)
    rows = [np.asarray(vectors[e.id], dtype=np.float64).ravel() for e in entries]
    if len({r.shape for r in rows}) > 1:
        msg = "cosine similarity needs vectors of one dimension"
        raise ValueError(msg)
    matrix = np.vstack(rows)
    # Normalised again although callers pass unit vectors: it is cheap and makes a stray
    # un-normalised vector harmless. Zero vectors stay zero (similarity 0 to everything).
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    unit: NDArray[np.float64] = matrix / norms
    return unit


_SimsTo: TypeAlias = Callable[[int, list[int]], list[float]]


def _similarity_fn(
    entries: Sequence[MemoryEntry],
    similarity: Similarity,
    vectors: Mapping[str, NDArray[np.floating]] | None,
) -> _SimsTo:
    """Return ``sims_to(chosen, others)``: similarities of entries ``others`` to ``chosen``."""
    if similarity == "bigram":
        grams = [word_bigrams(e.content) for e in entries]  # once per entry

        def bigram(chosen: int, others: list[int]) -> list[float]:
            anchor = grams[chosen]
            return [_jaccard(grams[i], anchor) for i in others]

        return bigram
    if similarity == "cosine":
        if vectors is None:
            msg = "mmr similarity 'cosine' needs vectors (entry id -> unit vector)"
            raise ValueError(msg)
        rows = _unit_rows(entries, vectors)

        def cosine(chosen: int, others: list[int]) -> list[float]:
            sims = np.clip(rows[others] @ rows[chosen], 0.0, 1.0)
            return [float(x) for x in sims]

        return cosine
    if isinstance(similarity, str):
        msg = f"unknown mmr similarity {similarity!r} (known: bigram, cosine, or a callable)"
        raise ValueError(msg)
    fn = similarity

    def custom(chosen: int, others: list[int]) -> list[float]:
        return [float(fn(entries[i], entries[chosen])) for i in others]

    return custom


def mmr(
    entries: Sequence[MemoryEntry],
    *,
    lambda_: float = 0.7,
    k: int | None = None,
    similarity: Similarity = "bigram",
    vectors: Mapping[str, NDArray[np.floating]] | None = None,
) -> list[MemoryEntry]:
    """Re-rank ``entries`` by Maximal Marginal Relevance and return the first ``k`` picks.

    Each step selects the remaining entry with the highest
    ``lambda_ * relevance_score - (1 - lambda_) * max_sim`` where ``max_sim`` is its largest
    similarity to an entry already selected (0 for the first pick; a missing ``relevance_score``
    counts as 0). Ties go to the entry earlier in the input. ``lambda_ = 1.0`` returns the input
    order exactly.

    ``similarity`` is ``"bigram"`` (Jaccard of word bigrams, the default), ``"cosine"`` (of
    ``vectors[entry.id]``, clipped at 0 so dissimilar entries earn no bonus) or a function of two
    entries returning a value in [0, 1]. Bigram sets (and normalised vectors) are computed once
    per entry, and each candidate's ``max_sim`` is updated only against the newest selection, so
    a re-ranking costs at most n * k similarity evaluations (O(n^2)), instead of recomputing
    every candidate's bigrams against every selected entry at each step (O(n^2 * k)).

    Every returned entry is a copy whose ``score.mmr_penalty`` holds
    ``(1 - lambda_) * max_sim`` at the time it was selected (a :class:`ScoreBreakdown` is created
    when the entry had none). ``relevance_score`` is deliberately left unchanged: it stays
    comparable across searches and with ``min_relevance``; MMR only changes the order, and the
    penalty is kept for ``--explain``.

    Raises:
        TypeError: ``lambda_`` is not a number.
        ValueError: ``lambda_`` outside [0, 1], ``k`` < 0, an unknown similarity name, or
            ``"cosine"`` without a vector for every entry.
    """
    lam = _check_lambda(lambda_)
    if k is not None and k < 0:
        msg = f"mmr k must be >= 0, got {k}"
        raise ValueError(msg)
    if isinstance(similarity, str) and similarity not in ("bigram", "cosine"):
        msg = f"unknown mmr similarity {similarity!r} (known: bigram, cosine, or a callable)"
        raise ValueError(msg)
    if similarity == "cosine" and vectors is None:
        msg = "mmr similarity 'cosine' needs vectors (entry id -> unit vector)"
        raise ValueError(msg)
    count = len(entries) if k is None else min(k, len(entries))
    if count == 0:
        return []
    if lam == 1.0:
        # No diversity weight: MMR reduces to the input order, so skip the similarity work.
        return [_with_penalty(e, 0.0) for e in entries[:count]]

    sims_to = _similarity_fn(entries, similarity, vectors)
    relevance = [e.relevance_score or 0.0 for e in entries]
    max_sim = [0.0] * len(entries)
    remaining = list(range(len(entries)))
    picked: list[MemoryEntry] = []
    while True:
        best_pos = 0
        best_value = -math.inf
        for pos, i in enumerate(remaining):
            value = lam * relevance[i] - (1.0 - lam) * max_sim[i]
            if value > best_value:  # strict: ties keep the earlier entry
                best_pos, best_value = pos, value
        chosen = remaining.pop(best_pos)
        picked.append(_with_penalty(entries[chosen], (1.0 - lam) * max_sim[chosen]))
        if len(picked) == count:
            break
        # Only the newest pick can raise a candidate's max similarity: one pass per pick.
        for i, sim in zip(remaining, sims_to(chosen, remaining), strict=True):
            if sim > max_sim[i]:
                max_sim[i] = sim
    return picked
