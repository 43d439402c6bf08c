"""Reads of :class:`~memvault.backends.composite.CompositeBackend` that merge its children.

``get``, ``count``, ``list_entries``, ``search_candidates``, the exports, ``agent_ids`` and
``stats`` ask every child (or the children owning the query's categories) and merge their
answers; the merge helpers are here too, shared with :mod:`._composite_shared`. This is
:class:`CompositeReadsMixin`, mixed into the composite, which owns the routing and the writes;
it is a separate module only to keep each file readable.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memvault._search import merge_candidates
from memvault.backends._base import Vectors, check_agent, check_id
from memvault.backends._common import check_filters, with_filters
from memvault.models import (
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MetadataFilter,
    StoreStats,
)
from memvault.protocols import Embedder, MemoryStore

__all__ = ["CompositeReadsMixin"]

# MemoryQuery.limit's ceiling: longer listings are read from a child in pages of this size.
_MAX_PAGE = 1000


class CompositeReadsMixin:
    """Merged reads of :class:`~memvault.backends.composite.CompositeBackend`."""

    if TYPE_CHECKING:
        # Provided by CompositeBackend (memvault.backends.composite).
        backend_name: str
        _children: tuple[MemoryStore, ...]

        @property
        def embedder(self) -> Embedder: ...

        @property
        def location(self) -> str: ...

        def _owners(self, categories: Iterable[MemoryCategory] | None) -> list[MemoryStore]: ...

        def _require_connected(self) -> None: ...

    # -- reads ----------------------------------------------------------------------------------

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent from whichever child holds it, or None."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        for child in self._children:
            entry = await child.get(agent, mid)
            if entry is not None:
                return entry
        return None

    async def count(
        self,
        agent_id: str,
        *,
        category: MemoryCategory | None = None,
        filters: Sequence[MetadataFilter] = (),
    ) -> int:
        """Number of the agent's memories (passing the metadata filters) over every child."""
        agent = check_agent(agent_id)
        wanted = check_filters(filters)
        self._require_connected()
        total = 0
        for child in self._children:
            if wanted:
                total += await child.count(agent, category=category, filters=wanted)
            else:
                # Without filters the call a store written for the design documents takes too.
                total += await child.count(agent, category=category)
        return total

    async def list_entries(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        offset: int = 0,
        filters: Sequence[MetadataFilter] = (),
    ) -> list[MemoryEntry]:
        """Entries passing the filters over every child, newest first, ``limit`` from ``offset``.

        Each child contributes its newest ``offset + limit`` matches (read in pages), which is
        all the merged page can need. ``filters`` join ``query.filters``, which every child
        applies.
        """
        agent = check_agent(agent_id)
        query = with_filters(query, filters)
        self._require_connected()
        if len(self._children) == 1:
            return await self._children[0].list_entries(agent, query, offset=offset)
        need = offset + query.limit
        page = min(need, _MAX_PAGE)
        paged = query.model_copy(update={"limit": page})
        rows: list[MemoryEntry] = []
        for child in self._children:
            got = 0
            while got < need:
                batch = await child.list_entries(agent, paged, offset=got)
                rows.extend(batch)
                got += len(batch)
                if len(batch) < page:
                    break
        # The children's own order (created_at, then id, descending), over the union.
        rows.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return rows[offset:need]

    async def search_candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        pool: int,
        dense: bool = True,
        neighbours: int = 0,
        hops: int = 1,
        terms: Sequence[str] | None = None,
        vector: Sequence[float] | Vectors | None = None,
    ) -> CandidateSet:
        """Candidates from the children owning the query's categories, merged by score.

        With one owning child this is exactly that child's answer. Otherwise each list is the
        top ``pool`` of the union (ties to the larger, i.e. newer, id as in every backend);
        entries, vectors and thread neighbours are the union of the children's.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        owners = self._owners(query.categories)

        async def one(child: MemoryStore) -> CandidateSet:
            return await child.search_candidates(
                agent,
                query,
                pool=pool,
                dense=dense,
                neighbours=neighbours,
                hops=hops,
                terms=terms,
                vector=vector,
            )

        if len(owners) == 1:
            return await one(owners[0])
        sets = await asyncio.gather(*(one(c) for c in owners))
        return _merge_sets(list(sets), pool)

    async def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) over every child, oldest first."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        streams = [c.export_entries(agent) for c in self._children]
        async for entry in _merge_oldest_first(streams):
            yield entry

    async def export_in_storage_order(
        self, agent_id: str | None = None
    ) -> AsyncIterator[MemoryEntry]:
        """Each child's entries in its insertion order, child after child.

        Children hold disjoint categories and a thread never spans categories, so this keeps
        every thread's adjacency when the entries are inserted elsewhere in this order.
        """
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        for child in self._children:
            async for entry in child.export_in_storage_order(agent):
                yield entry

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` from whichever child holds them."""
        self._require_connected()
        out: dict[str, Vectors] = {}
        for child in self._children:
            out.update(await child.export_vectors(ids))
        return out

    async def agent_ids(self) -> list[str]:
        """Every agent id with a memory in any child."""
        found: set[str] = set()
        for child in self._children:
            found.update(await child.agent_ids())
        return sorted(found)

    async def stats(self) -> StoreStats:
        """Counts summed over the children (agents counted once)."""
        parts = [await c.stats() for c in self._children]
        by_cat: Counter[str] = Counter()
        for p in parts:
            by_cat.update(p.by_category)
        sizes = [p.size_bytes for p in parts if p.size_bytes is not None]
        return StoreStats(
            backend=self.backend_name,
            location=self.location,
            total=sum(p.total for p in parts),
            by_category=dict(by_cat),
            agents=len(await self.agent_ids()),
            embedding_model=self.embedder.model_id,
            dimension=self.embedder.dimension,
            size_bytes=sum(sizes) if sizes else None,
        )


async def _merge_oldest_first(
    streams: Sequence[AsyncIterator[MemoryEntry]],
) -> AsyncIterator[MemoryEntry]:
    """Merge streams that are each oldest first ((created_at, id) ascending) into one."""
    heap: list[tuple[datetime, str, int, MemoryEntry]] = []
    try:
        for i, stream in enumerate(streams):
            first = await anext(stream, None)
            if first is not None:
                heapq.heappush(heap, (first.created_at, first.id, i, first))
        while heap:
            _, _, i, entry = heapq.heappop(heap)
            yield entry
            nxt = await anext(streams[i], None)
            if nxt is not None:
                heapq.heappush(heap, (nxt.created_at, nxt.id, i, nxt))
    finally:
        # A consumer that stops early must not leave the children's generators (and, for
        # SQLite, their pages in flight) open.
        for stream in streams:
            close: Any = getattr(stream, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()


def _merge_sets(sets: list[CandidateSet], pool: int) -> CandidateSet:
    """The union of the children's candidate sets (:func:`memvault._search.merge_candidates`)."""
    return sets[0] if len(sets) == 1 else merge_candidates(sets, pool=pool)
