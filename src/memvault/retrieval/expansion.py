"""Pseudo-relevance feedback: expand a query with the words of its best first-pass results.

The top few results of a first ranking usually share vocabulary with the memories the query is
really after (the other turns of the same story), even when the query itself does not. A second
lexical pass with those words, added at a lower weight, lifts such memories (RM3-style
expansion, here without an LLM).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from memvault.models import CandidateSet, MemoryEntry
from memvault.retrieval.text import tokenize

__all__ = ["expansion_terms", "merge_feedback"]


def expansion_terms(
    entries: Sequence[MemoryEntry], query_terms: Sequence[str], *, n_terms: int
) -> list[str]:
    """The ``n_terms`` analysed words most shared by ``entries`` that the query lacks.

    Words are ordered by how many of the entries contain them, then by first appearance.
    """
    known = set(query_terms)
    counts: Counter[str] = Counter()
    for entry in entries:
        # Each entry counts a word once; dict.fromkeys keeps first-appearance order for ties.
        counts.update(list(dict.fromkeys(t for t in tokenize(entry.content) if t not in known)))
    return [term for term, _ in counts.most_common(n_terms)]


def merge_feedback(cands: CandidateSet, feedback: CandidateSet, *, weight: float) -> None:
    """Add ``weight`` times the feedback pass's lexical scores to ``cands`` (in place).

    Entries found only by the feedback pass join the lexical list; neighbours and entries of
    the feedback pass are merged in.
    """
    scores = dict(cands.lexical)
    for entry_id, score in feedback.lexical:
        scores[entry_id] = scores.get(entry_id, 0.0) + weight * score
    cands.lexical = sorted(scores.items(), key=lambda p: (p[1], p[0]), reverse=True)
    cands.adopt_rows(feedback)
