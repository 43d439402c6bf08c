"""Skill promotion (seed 004, HeLa-Mem path): dense, often used graph regions become skill drafts.

A region is an entity with its valid edges. It qualifies when
``degree * mean(edge weight) > promotion.consolidation_threshold`` (the seed's query), it is
mentioned by at least ``min_memories`` of the agent's memories, and those were retrieved at
least ``min_accesses`` times in all (co-access also raises the weights). Each qualifying
region becomes a :class:`~memvault.learning.models.ProceduralMemoryProposal` (source
``evolver``) in the learning approval queue, pending a human; a region already proposed (same
``pattern_key``, whatever its status) is not proposed again. Nothing is written to the memories
until a human approves.

The scope is the agent's role pool when its profile names a role (approval adds the skill to
that pool), else ``agent`` (kept in the queue for review; see the approval docs).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from memvault._ids import new_id, utc_now
from memvault.config.graph import SkillPromotionConfig
from memvault.errors import MemoryNotFoundError
from memvault.graph.memory import GraphMemory
from memvault.injection.memory_api import MemoryAPI
from memvault.learning.engine import LearningEngine
from memvault.learning.models import (
    ApprovalItem,
    ApprovalStatus,
    ProceduralMemoryProposal,
    ProceduralMemoryScope,
    SupersessionVerdict,
    role_pool,
)
from memvault.models import MemoryEntry

__all__ = ["promote_skills"]

logger = logging.getLogger(__name__)

_MAX_MEMORIES = 12


def _pattern(agent_id: str, key: str) -> str:
    return f"graph-region:{agent_id}:{key}"[:300]


async def promote_skills(
    graph: GraphMemory,
    memory: MemoryAPI,
    learning: LearningEngine,
    agent_id: str,
    cfg: SkillPromotionConfig,
) -> list[ApprovalItem]:
    """Propose the agent's qualifying graph regions into the approval queue; the new items."""
    edges = await graph.store.edges(agent_id)
    degree: dict[str, int] = defaultdict(int)
    weight: dict[str, float] = defaultdict(float)
    neighbours: dict[str, dict[str, float]] = defaultdict(dict)
    for e in edges:
        for a, b in ((e.source, e.target), (e.target, e.source)):
            degree[a] += 1
            weight[a] += e.weight
            neighbours[a][b] = max(neighbours[a].get(b, 0.0), e.weight)
    scores = {k: degree[k] * (weight[k] / degree[k]) for k in degree}
    qualifying = sorted(
        (k for k, s in scores.items() if s > cfg.consolidation_threshold),
        key=lambda k: (-scores[k], k),
    )
    if not qualifying:
        return []
    known = {item.pattern_key for item in await learning.queue.list()}
    profile = await learning.get_profile(agent_id)
    entities = await graph.store.entities(agent_id, qualifying)
    mentions = await graph.store.mentions(agent_id, qualifying)
    out: list[ApprovalItem] = []
    for key in qualifying:
        if len(out) >= cfg.max_proposals:
            break
        pattern = _pattern(agent_id, key)
        ids = mentions.get(key, [])
        if pattern in known or len(ids) < cfg.min_memories:
            continue
        entries = await _entries(memory, agent_id, ids)
        accesses = sum(e.access_count for e in entries)
        if len(entries) < cfg.min_memories or accesses < cfg.min_accesses:
            continue
        entries.sort(key=lambda e: (-e.access_count, e.id))
        name = entities[key].name if key in entities else key
        related = [n for n, _w in sorted(neighbours[key].items(), key=lambda kv: -kv[1])][:5]
        proposal = ProceduralMemoryProposal(
            name=f"graph-{key}"[:64],
            discovery=f"Recurring knowledge about {name}, used {accesses} times"[:800],
            condition=(
                f"When a task involves {name}"
                + (f" (with {', '.join(related)})" if related else "")
            )[:1000],
            action=("Recall and apply: " + " | ".join(e.content[:200] for e in entries[:3]))[:1000],
            rationale=(
                f"A dense region of the memory graph: degree {degree[key]}, mean link weight "
                f"{weight[key] / degree[key]:.2f}, {len(ids)} memories"
            )[:1000],
            confidence=min(1.0, scores[key] / (2.0 * cfg.consolidation_threshold)),
            source="evolver",
            scope=ProceduralMemoryScope.ROLE if profile.role else ProceduralMemoryScope.AGENT,
        )
        evidence: dict[str, object] = {
            "agent_id": agent_id,
            "entity": key,
            "degree": degree[key],
            "mean_weight": round(weight[key] / degree[key], 4),
            "memory_ids": [e.id for e in entries],
            "accesses": accesses,
        }
        if profile.role:
            evidence["pool"] = role_pool(profile.role)
        item = ApprovalItem(
            id=new_id(),
            status=ApprovalStatus.PENDING,
            created_at=utc_now(),
            proposal=proposal,
            pattern_key=pattern,
            verdict=SupersessionVerdict.PARTIAL,
            evidence=evidence,
        )
        await learning.queue.add(item)
        out.append(item)
        logger.info(
            "memory.graph.skill_proposed",
            extra={"agent_id": agent_id, "entity": key, "approval_id": item.id},
        )
    return out


async def _entries(memory: MemoryAPI, agent_id: str, ids: list[str]) -> list[MemoryEntry]:
    async def one(memory_id: str) -> MemoryEntry | None:
        try:
            return await memory.get(memory_id, agent_id=agent_id)
        except MemoryNotFoundError:
            return None  # deleted or archived since it was indexed

    found = await asyncio.gather(*(one(i) for i in ids[:_MAX_MEMORIES]))
    # An archived original answers get() with consolidated_into set: not live evidence.
    return [
        e
        for e in found
        if e is not None and e.superseded_by is None and e.consolidated_into is None
    ]
