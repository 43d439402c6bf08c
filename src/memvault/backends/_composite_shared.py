"""Shared knowledge of :class:`~memvault.backends.composite.CompositeBackend`.

Shared knowledge is routed like private memories: ``publish`` goes to the child of the
request's category, ``retract`` to whichever child holds the entry, and shared searches and the
audit log merge the children's answers. This is :class:`CompositeSharedMixin`, mixed into the
composite, which owns the routing; it is a separate module only to keep each file readable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, cast

from memvault._search import hybrid_search
from memvault.backends._composite_reads import _merge_sets
from memvault.errors import MemoryCapabilityError
from memvault.models import (
    AuditRecord,
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import MemoryStore, SharedMemoryStore
from memvault.retrieval.presets import RetrievalConfig

__all__ = ["CompositeSharedMixin"]


class CompositeSharedMixin:
    """Shared knowledge and audit log of :class:`~memvault.backends.composite.CompositeBackend`."""

    if TYPE_CHECKING:
        # Provided by CompositeBackend (memvault.backends.composite).
        _children: tuple[MemoryStore, ...]
        _preset: RetrievalConfig
        _clock: Callable[[], datetime]

        @property
        def supports_shared_access(self) -> bool: ...

        def route(self, category: MemoryCategory) -> MemoryStore: ...

        def _owners(self, categories: Iterable[MemoryCategory] | None) -> list[MemoryStore]: ...

        def _require_connected(self) -> None: ...

    # -- shared knowledge (routed by category, like private memories) ----------------------------

    def _shared_children(self) -> list[SharedMemoryStore]:
        if not self.supports_shared_access:
            msg = "composite backend: not every child store keeps shared knowledge"
            raise MemoryCapabilityError(msg)
        return [c for c in self._children if isinstance(c, SharedMemoryStore)]

    async def publish(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Publish shared knowledge in the child that stores the request's category."""
        self._require_connected()
        self._shared_children()
        child = self.route(request.category)
        assert isinstance(child, SharedMemoryStore)  # checked by _shared_children
        return await child.publish(agent_id, request)

    async def retract(self, agent_id: str, memory_id: str) -> bool:
        """Retract shared knowledge from whichever child holds it (author only)."""
        self._require_connected()
        for child in self._shared_children():
            if await child.retract(agent_id, memory_id):
                return True
        return False

    async def search_shared_candidates(
        self,
        query: MemoryQuery,
        *,
        pool: int,
        dense: bool = True,
        neighbours: int = 0,
        hops: int = 1,
        terms: Sequence[str] | None = None,
        exclude_agent: str | None = None,
    ) -> CandidateSet:
        """Shared candidates of the owning children, merged like :meth:`search_candidates`."""
        self._require_connected()
        shared = self._shared_children()
        owners = [c for c in self._owners(query.categories) if c in shared]
        sets = await asyncio.gather(
            *(
                c.search_shared_candidates(
                    query,
                    pool=pool,
                    dense=dense,
                    neighbours=neighbours,
                    hops=hops,
                    terms=terms,
                    exclude_agent=exclude_agent,
                )
                for c in owners
            )
        )
        return _merge_sets(list(sets), pool)

    async def search_shared(
        self, query: MemoryQuery, *, exclude_agent: str | None = None
    ) -> tuple[MemoryEntry, ...]:
        """Search the shared knowledge of every child, ranked together."""
        self._require_connected()
        shared = self._shared_children()
        if not query.text or not query.text.strip():
            rows = [
                e for c in shared for e in await c.search_shared(query, exclude_agent=exclude_agent)
            ]
            rows.sort(key=lambda e: (e.created_at, e.id), reverse=True)
            return tuple(rows[: query.limit])
        ranked = await hybrid_search(
            cast(MemoryStore, self),  # a CompositeBackend is a MemoryStore
            None,
            query,
            self._preset,
            now=self._clock(),
            include_shared=True,
            exclude_agent=exclude_agent,
        )
        return tuple(ranked)

    async def audit_log(
        self, *, memory_id: str | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """The children's audit records merged, oldest first, at most ``limit``."""
        self._require_connected()
        rows = [
            r
            for c in self._shared_children()
            for r in await c.audit_log(memory_id=memory_id, limit=limit)
        ]
        rows.sort(key=lambda r: (r.at, r.id))
        return rows[:limit]
