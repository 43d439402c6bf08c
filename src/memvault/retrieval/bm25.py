"""Okapi BM25 exactly as SQLite FTS5's ``bm25()`` computes it (k1=1.2, b=0.75).

FTS5 uses ``idf = log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6 and document length in tokens;
backends that have no FTS5 (in-memory, and PostgreSQL's term tables) compute the same numbers with
:func:`bm25_scores` so rankings agree across backends.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "K1",
    "PRUNE_MAX_RATIO",
    "PRUNE_MIN_DOCS",
    "B",
    "bm25_scores",
    "bounded_scan",
    "idf",
    "prune_common_terms",
]

K1 = 1.2
B = 0.75

PRUNE_MIN_DOCS = 20_000
"""Stores smaller than this are searched with every query term."""

PRUNE_MAX_RATIO = 0.05
"""In larger stores, a term found in more than this share of documents is dropped."""


def idf(doc_count: int, doc_freq: int) -> float:
    """FTS5's inverse document frequency (never below 1e-6)."""
    value = math.log((doc_count - doc_freq + 0.5) / (doc_freq + 0.5))
    return value if value > 0 else 1e-6


#: Tokens every indexed row holds besides its text. SQLite's FTS5 row also carries a scope key
#: (one token, so a search matches only its own agent's rows), and FTS5's bm25() counts every
#: column in a row's length D and in avgdl. The in-memory and PostgreSQL backends add the same
#: to rank identically.
ROW_EXTRA_TOKENS = 1


def bm25_scores(
    terms: Sequence[str],
    docs: Iterable[tuple[str, Mapping[str, int], int]],
    *,
    doc_count: int,
    avg_len: float,
    doc_freq: Mapping[str, int],
) -> list[tuple[str, float]]:
    """Score ``docs`` (``(id, term -> frequency, length)``) for ``terms``; positive, best first.

    Ties are broken by descending id.

    Documents matching no term are left out.
    """
    weights = {t: idf(doc_count, doc_freq.get(t, 0)) for t in terms}
    avg = avg_len if avg_len > 0 else 1.0
    scored: list[tuple[str, float]] = []
    for doc_id, freqs, length in docs:
        total = 0.0
        norm = K1 * (1.0 - B + B * length / avg)
        for term, weight in weights.items():
            f = freqs.get(term, 0)
            if f:
                total += weight * ((f * (K1 + 1.0)) / (f + norm))
        if total > 0.0:
            scored.append((doc_id, total))
    # Best first; ties go to the larger id (the newer entry), as FTS5 ordering does in SQLite.
    scored.sort(key=lambda pair: pair[0], reverse=True)
    scored.sort(key=lambda pair: -pair[1])
    return scored


def prune_common_terms(
    terms: Sequence[str],
    doc_freq: Mapping[str, int],
    doc_count: int,
    *,
    max_ratio: float = PRUNE_MAX_RATIO,
    min_docs: int = PRUNE_MIN_DOCS,
) -> list[str]:
    """Drop query terms so common that scoring them would cost more than they tell.

    BM25 scores every document that matches any term, and a term in a large share of a big
    store matches tens of thousands of documents while its idf adds almost nothing to the
    ranking. In stores of at least ``min_docs`` documents, terms found in more than
    ``max_ratio`` of them are dropped, unless every term is that common (then the rarest one
    is kept). Every backend applies the same rule, so rankings stay identical across them.
    """
    if doc_count < min_docs or len(terms) < 2:
        return list(terms)
    limit = max_ratio * doc_count
    kept = [t for t in terms if doc_freq.get(t, 0) <= limit]
    if kept:
        return kept
    return [min(terms, key=lambda t: (doc_freq.get(t, 0), t))]


def bounded_scan(
    doc_freqs: Sequence[int], max_rows: int, *, max_paired: int = 6
) -> tuple[list[int], list[int]] | None:
    """Which rows to score when scoring every row that matches a query term would cost too much.

    For a backend that pays for each matching row it scores (PostgreSQL fetches the row and
    reads its term frequencies). Returns None when the terms' rows together fit in
    ``max_rows``: score them all. Otherwise ``(essential, paired)``, positions in
    ``doc_freqs``:

    * ``essential``: the rarest terms whose rows add up to at most ``max_rows``; every row
      matching one of them is scored (rare terms carry most of BM25's weight);
    * ``paired``: up to ``max_paired`` of the rarest other terms; rows matching at least two of
      them are scored too, as far as the bound allows (a row with two common query terms can
      outrank one with a single rare term).

    Every scored row is scored with all the terms, so scores are exact; only rows matching a
    single common term (and nothing else) can be left out, and the caller adds the rows it
    already holds (the dense candidates). ``max_rows <= 0`` never bounds.
    """
    if max_rows <= 0 or sum(doc_freqs) <= max_rows:
        return None
    order = sorted((i for i, df in enumerate(doc_freqs) if df), key=lambda i: (doc_freqs[i], i))
    essential: list[int] = []
    rows = 0
    for i in order:
        if rows + doc_freqs[i] > max_rows:
            break
        essential.append(i)
        rows += doc_freqs[i]
    rest = order[len(essential) :]
    paired = rest[:max_paired] if len(rest) >= 2 else []
    return sorted(essential), sorted(paired)
