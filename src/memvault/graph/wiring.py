"""What :class:`memvault.AsyncMemory` calls on its write and search paths (only when enabled).

Kept here so the front door gains a few lines, not the logic: importance scoring of a write
batch, graph indexing of what was stored, and graph re-ranking of a widened search.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from memvault._ids import utc_now
from memvault.config.graph import ImportanceConfig
from memvault.errors import MemoryError
from memvault.graph.memory import GraphMemory
from memvault.models import MemoryEntry, MemoryQuery, MemoryStoreRequest
from memvault.protocols import MemoryStore
from memvault.retrieval.importance import importance_score
from memvault.retrieval.presets import RetrievalConfig
from memvault.retrieval.signals import five_signal_rank, merge_activation

__all__ = [
    "DEFAULT_IMPORTANCE",
    "graph_rank",
    "index_stored",
    "score_importance",
    "strengthen_quietly",
    "widen",
]

logger = logging.getLogger(__name__)

DEFAULT_IMPORTANCE = 0.5
"""A request whose importance is still the model's default gets the computed one."""

_WIDEN = 3  # a graph-ranked search re-ranks three times as many results as it returns


async def score_importance(
    store: MemoryStore,
    agent_id: str,
    requests: Sequence[MemoryStoreRequest],
    cfg: ImportanceConfig,
) -> list[MemoryStoreRequest]:
    """``requests`` with importance computed where the caller left the default.

    Novelty compares each text with the agent's five most similar memories, found lexically
    (no embedding on the write path for this).
    """
    out: list[MemoryStoreRequest] = []
    for request in requests:
        if request.metadata.importance != DEFAULT_IMPORTANCE:
            out.append(request)
            continue
        neighbours: list[str] = []
        try:
            found = await store.search_candidates(
                agent_id,
                MemoryQuery(text=request.content[:2000], limit=5),
                pool=5,
                dense=False,
            )
            neighbours = [found.entries[i].content for i, _s in found.lexical if i in found.entries]
        except MemoryError as exc:  # a failed lookup must not fail the write: novelty unknown
            logger.warning("memory.importance.neighbours_failed", extra={"error": str(exc)})
        score = importance_score(
            request.content,
            neighbours=neighbours,
            entity_weight=cfg.entity_weight,
            novelty_weight=cfg.novelty_weight,
            marker_weight=cfg.marker_weight,
        )
        meta = request.metadata.model_copy(update={"importance": score})
        out.append(request.model_copy(update={"metadata": meta}))
    return out


async def index_stored(
    graph: GraphMemory,
    agent_id: str,
    requests: Sequence[MemoryStoreRequest],
    ids: Sequence[str | None],
) -> None:
    """Index the stored ones of ``requests`` (``ids[i]`` None: not stored) into the graph."""
    now = utc_now()
    items = [
        (memory_id, request.created_at or now, request.content)
        for request, memory_id in zip(requests, ids, strict=True)
        if memory_id
    ]
    if items:
        await graph.index(agent_id, items)


def widen(query: MemoryQuery, cfg: RetrievalConfig) -> tuple[MemoryQuery, RetrievalConfig]:
    """The query and config of a graph-ranked search: a longer result list, same candidates.

    The candidate pool and the neighbour window are pinned to what the plain search of
    ``query.limit`` uses, so the widened list starts with the plain search's results in the
    plain order (graph activation then decides what moves up; with none, nothing does).
    """
    wide = query.model_copy(update={"limit": min(query.limit * _WIDEN, 1000)})
    pinned = cfg.model_copy(
        update={
            "min_candidates": cfg.pool_size(query.limit),
            "candidate_pool_multiplier": 1,
            "neighbours_per_result": cfg.neighbour_window(query.limit) // wide.limit,
        }
    )
    return wide, pinned


async def graph_rank(
    graph: GraphMemory,
    agent_id: str,
    text: str,
    results: list[MemoryEntry],
    cfg: RetrievalConfig,
    *,
    extras: Sequence[MemoryEntry] = (),
    weight: float,
    limit: int,
    as_of: datetime | None,
    now: datetime,
) -> list[MemoryEntry]:
    """Re-rank a search's results with graph activation (and five signals if set).

    ``results`` is the plain search, in its order; ``extras`` the further results of a wider
    search, which may move up. Seeds are the query's entities and those of the top few plain
    results. Only what the searches found (under every filter of the query) is ranked, so
    graph recall reorders what the filters allow, never adds what they exclude.

    The base relevance is made decreasing along the plain order (an extra is capped at the
    last plain result's), so without activation the plain order comes back unchanged.
    """
    if not results:
        return results
    seed = [e.id for e in results[: graph.config.seed_from_results]]
    recall = await graph.recall(agent_id, text, as_of=as_of, seed_memories=seed)
    pool: list[MemoryEntry] = []
    floor = 1.0
    seen: set[str] = set()
    for e in [*results, *extras]:
        if e.id in seen:
            continue
        seen.add(e.id)
        # Strictly decreasing: ties (a thread-spread or MMR order) keep the plain order too.
        floor = max(0.0, min(floor, e.relevance_score or 0.0) - 1e-9)
        pool.append(e.model_copy(update={"relevance_score": floor}))
    ranked = pool
    if weight > 0:
        ranked = merge_activation(ranked, recall.memories, weight=weight)
    if cfg.signals is not None:
        ranked = five_signal_rank(ranked, recall.memories, cfg.signals, now=now)
    return ranked[:limit]


async def strengthen_quietly(graph: GraphMemory, agent_id: str, ids: list[str]) -> None:
    """Co-access strengthening behind a search: a failure is logged, never raised."""
    try:
        await graph.strengthen(agent_id, ids)
    except MemoryError as exc:
        logger.warning("memory.graph.strengthen_failed", extra={"error": str(exc)})
