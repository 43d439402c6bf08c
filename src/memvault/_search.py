"""One search procedure for every front door: candidates -> feedback pass -> ranking.

It composes a store's candidate generation (I/O) with the pure ranking stages, so
:meth:`AsyncMemory.search` and every backend's ``retrieve`` rank identically.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from memvault.models import CandidateSet, MemoryEntry, MemoryQuery
from memvault.protocols import MemoryStore
from memvault.retrieval.expansion import expansion_terms, merge_feedback
from memvault.retrieval.filters import MemoryFilterStrategy
from memvault.retrieval.pipeline import rank
from memvault.retrieval.presets import RetrievalConfig
from memvault.retrieval.text import query_terms

__all__ = ["hybrid_search"]


async def hybrid_search(
    store: MemoryStore,
    agent_id: str,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    now: datetime,
    shared_ids: Collection[str] = (),
    filter_strategy: MemoryFilterStrategy | None = None,
) -> list[MemoryEntry]:
    """Search ``store`` for ``query`` with ``config``; best first, at most ``query.limit``."""
    text = query.text or ""
    cands = await _candidates(store, agent_id, query, config, terms=None)
    if config.feedback_weight > 0 and config.use_lexical and cands.lexical:
        first = rank(cands, config, now=now, limit=config.feedback_docs, query_text=text)
        words = expansion_terms(first, query_terms(text), n_terms=config.feedback_terms)
        if words:
            extra = await _candidates(store, agent_id, query, config, terms=words)
            merge_feedback(cands, extra, weight=config.feedback_weight)
    return rank(
        cands,
        config,
        now=now,
        limit=query.limit,
        min_relevance=query.min_relevance,
        shared_ids=shared_ids,
        filter_strategy=filter_strategy,
        query_text=text,
    )


async def _candidates(
    store: MemoryStore,
    agent_id: str,
    query: MemoryQuery,
    config: RetrievalConfig,
    *,
    terms: list[str] | None,
) -> CandidateSet:
    return await store.search_candidates(
        agent_id,
        query,
        pool=config.pool_size(query.limit),
        # The feedback pass is lexical only: the dense side does not change with new words.
        dense=config.use_dense and terms is None,
        neighbours=config.neighbour_window(query.limit),
        hops=config.neighbour_hops,
        terms=terms,
    )
