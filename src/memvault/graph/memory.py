"""The graph memory of one store: extraction at write, recall from a query's entities.

:class:`GraphMemory` ties an :class:`~memvault.graph.extract.Extractor` to a
:class:`~memvault.graph.store.GraphStore`; :class:`memvault.AsyncMemory` opens one beside its
memories when ``graph.enabled`` and indexes every stored memory into it.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from memvault.config.graph import GraphConfig
from memvault.errors import MemoryConfigError
from memvault.graph.causal import is_causal, link_for, propagate
from memvault.graph.extract import Extractor, RuleExtractor, entity_key
from memvault.graph.models import EpisodeLink, GraphEdge, GraphEntity, GraphRecall, RecallMode
from memvault.graph.recall import bfs, score_memories, specificity, spread
from memvault.graph.store import GraphStore
from memvault.protocols import LLMProvider

__all__ = ["GraphMemory", "open_graph_memory"]

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")


class GraphMemory:
    """Entities and typed temporal edges of a store's memories, and recall over them."""

    def __init__(
        self,
        store: GraphStore,
        config: GraphConfig,
        *,
        extractor: Extractor | None = None,
    ) -> None:
        self._store = store
        self._config = config
        self._extractor: Extractor = extractor or RuleExtractor()
        self._rules = RuleExtractor()

    @property
    def store(self) -> GraphStore:
        """Where the graph lives."""
        return self._store

    @property
    def config(self) -> GraphConfig:
        """The graph settings."""
        return self._config

    async def index(self, agent_id: str, items: Sequence[tuple[str, datetime, str]]) -> int:
        """Extract and store the entities and edges of memories ``(id, created_at, content)``.

        Returns how many entities were indexed.
        """
        batch = []
        extracted = []
        total = 0
        for memory_id, at, content in items:
            extraction = await self._extractor.extract(content)
            total += len(extraction.entities)
            extracted.append((memory_id, at, content, [e.key for e in extraction.entities]))
            if extraction.entities or extraction.edges:
                batch.append((memory_id, at, extraction))
        if batch:
            await self._store.add(
                agent_id,
                batch,
                increment=self._config.co_access_increment,
                max_weight=self._config.max_weight,
            )
        if self._config.causal_links:
            await self._link_episodes(agent_id, extracted)
        return total

    async def _link_episodes(
        self, agent_id: str, items: Sequence[tuple[str, datetime, str, list[str]]]
    ) -> None:
        """EM-Graph: link each new memory to the event before it (see memvault.graph.causal)."""
        window = timedelta(days=self._config.causal_window_days)
        links: list[EpisodeLink] = []
        for memory_id, at, content, keys in items:
            since = at - window
            sharing = (
                await self._store.earlier_mentions(agent_id, keys, since=since, before=at)
                if keys
                else []
            )
            latest = None
            if not sharing and is_causal(content):
                latest = await self._store.latest_before(agent_id, since=since, before=at)
            link = link_for(memory_id, at, content, sharing=sharing, latest=latest, window=window)
            if link is not None:
                links.append(link)
        await self._store.add_episode_links(agent_id, links)

    async def query_entities(self, agent_id: str, text: str) -> dict[str, GraphEntity]:
        """The agent's known entities named in ``text`` (names, words and word pairs)."""
        words = [entity_key(w) for w in _WORD.findall(text)]
        words = [w for w in words if len(w) >= 3]
        keys = {e.key for e in self._rules.extract_sync(text).entities}
        keys.update(words)
        keys.update(f"{a} {b}" for a, b in itertools.pairwise(words))
        return await self._store.entities(agent_id, sorted(keys))

    async def recall(
        self,
        agent_id: str,
        text: str,
        *,
        as_of: datetime | None = None,
        mode: RecallMode = RecallMode.SPREADING,
        hops: int | None = None,
        seed_memories: Sequence[str] = (),
        limit: int | None = None,
    ) -> GraphRecall:
        """Entities reached from the query's entities, and the memories that mention them.

        ``seed_memories`` (e.g. the top hits of a plain search) add their entities as seeds at
        half weight: the bridge to a second hop of a multi-hop question. Only edges valid at
        ``as_of`` (now when None) are walked, and only memories mentioned by then count.
        """
        cfg = self._config
        found = await self.query_entities(agent_id, text)
        seeds = {k: specificity(e.mentions) for k, e in found.items()}
        if seed_memories:
            linked = await self._store.entities_of(agent_id, list(seed_memories))
            extra = sorted({k for ks in linked.values() for k in ks} - set(seeds))
            for key, entity in (await self._store.entities(agent_id, extra)).items():
                seeds[key] = 0.5 * specificity(entity.mentions)
        if not seeds:
            return GraphRecall(mode=mode)
        depth = hops if hops is not None else cfg.max_hops
        edges = await self._edges_around(agent_id, list(seeds), depth, as_of)
        if mode is RecallMode.BFS:
            activation = bfs(seeds, edges, hops=depth, decay=cfg.decay)
            activation = dict(sorted(activation.items(), key=lambda kv: -kv[1])[: cfg.max_entities])
        else:
            activation = spread(
                seeds,
                edges,
                rounds=depth,
                decay=cfg.decay,
                threshold=cfg.activation_threshold,
                limit=cfg.max_entities,
            )
        keys = list(activation)
        mentions = await self._store.mentions(agent_id, keys, as_of=as_of)
        counts = {k: e.mentions for k, e in (await self._store.entities(agent_id, keys)).items()}
        cap = limit if limit is not None else cfg.max_memories
        memories = score_memories(activation, mentions, counts, limit=cap)
        if cfg.causal_links and memories:
            # One hop across the EM-Graph: causes of what was found, and their effects.
            links = await self._store.episode_links(agent_id, list(memories), as_of=as_of)
            memories = propagate(memories, links, decay=cfg.causal_decay, limit=cap)
        return GraphRecall(
            seeds=tuple(sorted(seeds)), entities=activation, memories=memories, mode=mode
        )

    async def _edges_around(
        self, agent_id: str, seeds: list[str], depth: int, as_of: datetime | None
    ) -> list[GraphEdge]:
        """The valid edges within ``depth`` hops of the seeds (one query per hop)."""
        seen = set(seeds)
        frontier = list(seeds)
        edges: dict[str, GraphEdge] = {}
        for _ in range(depth):
            if not frontier:
                break
            batch = await self._store.edges(agent_id, frontier, as_of=as_of)
            nxt: set[str] = set()
            for e in batch:
                edges[e.id] = e
                for node in (e.source, e.target):
                    if node not in seen:
                        nxt.add(node)
            seen |= nxt
            # The strongest links first, so a hub does not flood the next hop.
            frontier = sorted(nxt)[: self._config.max_entities * 4]
        return list(edges.values())

    async def strengthen(self, agent_id: str, memory_ids: Sequence[str]) -> int:
        """Strengthen the links between memories retrieved together (see GraphStore)."""
        if len(memory_ids) < 2 or self._config.co_access_increment <= 0:
            return 0
        return await self._store.strengthen(
            agent_id,
            memory_ids,
            increment=self._config.co_access_increment,
            max_weight=self._config.max_weight,
        )

    async def episode_links(
        self, agent_id: str, memory_ids: Sequence[str], *, as_of: datetime | None = None
    ) -> list[EpisodeLink]:
        """The EM-Graph links touching ``memory_ids`` (``graph.causal_links``)."""
        return await self._store.episode_links(agent_id, memory_ids, as_of=as_of)

    async def entities(self, agent_id: str, *, limit: int = 100) -> list[GraphEntity]:
        """The agent's most mentioned entities."""
        return await self._store.all_entities(agent_id, limit=limit)

    async def edges(
        self,
        agent_id: str,
        entity: str | None = None,
        *,
        as_of: datetime | None = None,
        include_closed: bool = False,
    ) -> list[GraphEdge]:
        """The agent's edges (touching ``entity`` when given), valid now or at ``as_of``."""
        keys = None if entity is None else [entity_key(entity)]
        return await self._store.edges(agent_id, keys, as_of=as_of, include_closed=include_closed)

    async def close(self) -> None:
        """Close the graph store."""
        await self._store.close()


def open_graph_memory(
    url: str | None, config: GraphConfig, *, llm: LLMProvider | None = None
) -> GraphMemory:
    """The entity graph beside the memories at ``url`` (None or ``memory://``: in process).

    ``config.extractor == "llm"`` extracts entities with ``llm`` when one is given (rules
    otherwise). Nothing is opened until first use.

    Raises:
        MemoryConfigError: graph memory is off (``graph.enabled: false``).
    """
    if not config.enabled:
        msg = "graph memory is off: set graph.enabled: true"
        raise MemoryConfigError(msg)
    from memvault.graph.extract import LLMExtractor
    from memvault.graph.store import open_graph_store

    extractor = LLMExtractor(llm) if config.extractor == "llm" and llm is not None else None
    return GraphMemory(open_graph_store(url), config, extractor=extractor)
