"""Walking the graph: BFS recall and spreading activation (pure functions over edges).

Both start from seed entities (the query's, weighted by how specific each is) and give every
reached entity an activation in [0, 1]:

* BFS: ``decay ** hops`` of the shortest path (the seed's plain graph recall);
* spreading activation (SYNAPSE): each round, an active entity passes
  ``activation * decay * (1 - exp(-weight))`` along each of its strongest edges, so strong
  (often co-accessed) links carry more; an entity keeps the best it receives.

Memories are then scored by the activation of the entities they mention, each entity weighted
by its specificity (a name mentioned in every memory says little about any of them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from memvault.graph.models import GraphEdge

__all__ = ["bfs", "score_memories", "specificity", "spread"]

_FAN_OUT = 16  # edges followed per entity and round (the strongest)


def specificity(mentions: int) -> float:
    """How much one mention of an entity says: 1 for a rare entity, less for common ones."""
    return 1.0 / (1.0 + math.log1p(max(0, mentions - 1)))


def _adjacency(edges: Iterable[GraphEdge]) -> dict[str, list[tuple[str, float]]]:
    adj: dict[str, list[tuple[str, float]]] = {}
    for e in edges:
        adj.setdefault(e.source, []).append((e.target, e.weight))
        adj.setdefault(e.target, []).append((e.source, e.weight))
    for links in adj.values():
        links.sort(key=lambda x: -x[1])
        del links[_FAN_OUT:]
    return adj


def bfs(
    seeds: Mapping[str, float], edges: Iterable[GraphEdge], *, hops: int, decay: float
) -> dict[str, float]:
    """Entities within ``hops`` of the seeds: seed activation times ``decay ** distance``."""
    adj = _adjacency(edges)
    act = dict(seeds)
    frontier = list(seeds)
    for _ in range(hops):
        nxt: list[str] = []
        for node in frontier:
            for other, _w in adj.get(node, ()):
                value = act[node] * decay
                if value > act.get(other, 0.0):
                    if other not in act:
                        nxt.append(other)
                    act[other] = value
        frontier = nxt
    return act


def spread(
    seeds: Mapping[str, float],
    edges: Iterable[GraphEdge],
    *,
    rounds: int,
    decay: float,
    threshold: float,
    limit: int,
) -> dict[str, float]:
    """Spreading activation from ``seeds`` for ``rounds`` rounds (see the module docstring).

    Entities below ``threshold`` neither spread nor stay; at most ``limit`` (the strongest) are
    returned.
    """
    adj = _adjacency(edges)
    act = {k: v for k, v in seeds.items() if v >= threshold}
    frontier = dict(act)
    for _ in range(rounds):
        nxt: dict[str, float] = {}
        for node, value in frontier.items():
            for other, weight in adj.get(node, ()):
                passed = value * decay * (1.0 - math.exp(-weight))
                if passed >= threshold and passed > act.get(other, 0.0):
                    act[other] = passed
                    nxt[other] = passed
        frontier = nxt
        if not frontier:
            break
    best = sorted(act.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return dict(best)


def score_memories(
    activation: Mapping[str, float],
    mentions: Mapping[str, list[str]],
    counts: Mapping[str, int],
    *,
    limit: int,
) -> dict[str, float]:
    """Memory id -> activation in [0, 1] from the entities it mentions (best ``limit``).

    A memory's raw score is the sum over its activated entities of activation times
    specificity; scores are divided by the best one.
    """
    raw: dict[str, float] = {}
    for key, ids in mentions.items():
        value = activation.get(key, 0.0) * specificity(counts.get(key, len(ids)))
        if value <= 0.0:
            continue
        for memory_id in ids:
            raw[memory_id] = raw.get(memory_id, 0.0) + value
    if not raw:
        return {}
    top = max(raw.values())
    best = sorted(raw.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return {m: v / top for m, v in best}
