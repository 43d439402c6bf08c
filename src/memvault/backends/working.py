"""A durable store whose WORKING memories live in process: :class:`WorkingOverlay`.

The design documents give WORKING memory (the current task's context) no persistence: it is
in-context, never written to the durable store. ``AsyncMemory`` and the service therefore wrap
every durable store (SQLite, PostgreSQL) in an overlay that routes the WORKING category to an
:class:`~memvault.backends.inmemory.InMemoryBackend` owned by that one memory object, unless the
configuration routes ``working`` somewhere explicitly (``backend: composite`` with
``composite.routes: {working: <url>}``); see
:func:`memvault.backends.factory.keep_working_in_process`.

The overlay is a :class:`~memvault.backends.composite.CompositeBackend` with two children, so
reads over every category (search, list, count, export, get, delete, clear, stats, agent ids)
merge both, and agent isolation is each child's. What it costs, and how the cost is kept off
the common path:

* writes: a batch without WORKING requests goes straight to the durable store, with the
  planner's vectors (a plain composite would embed the batch again);
* searches: until a WORKING memory is written through it (the usual case), the durable store
  answers alone, with no count of the scratch store; once one was, an agent holding none still
  gets the durable store alone, and otherwise both are asked in parallel and their candidates
  merged by score (one embedding model, checked at construction);
* imports (``import_``: restoring exported data) go to the durable store whole, WORKING
  entries included, since that data was stored already and must not vanish with the process;
* the durable store's extra tables and methods (archive, restore, audit, consolidation marks,
  maintenance state...) are reached through it: the overlay forwards any attribute it does not
  define to the durable store, so archive/audit work as before for durable memories. WORKING
  memories are never archived (they are in-context, transient): a sweep or cap that picks one
  deletes it from process memory instead.

``location``, ``backend_name`` and ``stats().backend`` are the durable store's: the overlay is
an implementation detail of the level, not a store the user configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memvault.backends._base import check_agent
from memvault.backends.composite import CompositeBackend
from memvault.models import (
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
)
from memvault.protocols import MemoryStore, Vectors
from memvault.retrieval.presets import RetrievalConfig

__all__ = ["WorkingOverlay"]

_WORKING = MemoryCategory.WORKING


class WorkingOverlay(CompositeBackend):
    """``durable`` for every category but WORKING, which ``scratch`` keeps in process.

    Args:
        durable: the store every other category lives in (and whose extra methods, such as
            ``archive`` or ``record_audit``, the overlay forwards to).
        scratch: the in-process store of WORKING memories (an ``InMemoryBackend`` sharing the
            durable store's embedder).
        preset: the retrieval preset of ``retrieve``.
    """

    def __init__(
        self, durable: MemoryStore, scratch: MemoryStore, *, preset: RetrievalConfig | str
    ) -> None:
        super().__init__({_WORKING: scratch}, durable, preset=preset)
        self._scratch = scratch
        # False until a WORKING memory is routed to the scratch store: until then every read is
        # the durable store's alone, with no count of the scratch and no second agent check.
        self._used = False

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes the overlay lacks: the durable store's extra methods
        # (archive, restore, record_audit, export_rows, mark_consolidated ...). Private names
        # are not forwarded, so a half-built object cannot recurse into itself.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._default, name)

    @property
    def backend_name(self) -> str:  # type: ignore[override]
        """The durable store's name (``sqlite``, ``postgresql`` ...)."""
        return self._default.backend_name

    @property
    def location(self) -> str:
        """The durable store's location."""
        return self._default.location

    @property
    def durable(self) -> MemoryStore:
        """The store every category but WORKING lives in."""
        return self._default

    @property
    def scratch(self) -> MemoryStore:
        """The in-process store of WORKING memories."""
        return self._scratch

    def route(self, category: MemoryCategory) -> MemoryStore:
        """The child of ``category`` (every write is routed here: a WORKING one marks use)."""
        child = super().route(category)
        if child is self._scratch:
            self._used = True
        return child

    async def store_many(
        self,
        agent_id: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        vectors: Sequence[Vectors] | None = None,
    ) -> list[str]:
        """Store memories; a batch without WORKING ones goes straight to the durable store."""
        if all(r.category is not _WORKING for r in requests):
            self._require_connected()
            return await self._default.store_many(agent_id, requests, vectors=vectors)
        if all(r.category is _WORKING for r in requests):
            self._require_connected()
            self._used = True
            return await self._scratch.store_many(agent_id, requests, vectors=vectors)
        return await super().store_many(agent_id, requests, vectors=vectors)

    async def import_entries(self, entries: Sequence[MemoryEntry]) -> int:
        """Restore exported entries into the durable store, WORKING ones included.

        An import restores data that was already stored (a backup, a move between stores):
        dropping its WORKING entries into this process would lose them silently when it ends,
        and nothing may be silently lost. New WORKING writes still stay in process.
        """
        self._require_connected()
        return await self._default.import_entries(entries)

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
        """Candidates of both stores, or of the durable one alone when nothing is in process."""
        agent = agent_id
        # Until a WORKING memory was routed here (the usual case) there is nothing in process.
        wants_working = self._used and (query.categories is None or _WORKING in query.categories)
        if wants_working:
            agent = check_agent(agent_id)
            self._require_connected()
            if query.categories != frozenset({_WORKING}):
                wants_working = await self._scratch.count(agent, category=_WORKING) > 0
                if not wants_working:
                    query = query if query.categories is None else _without_working(query)
        if not wants_working:  # the durable store alone (it checks the agent id itself)
            return await self._default.search_candidates(
                agent,
                query,
                pool=pool,
                dense=dense,
                neighbours=neighbours,
                hops=hops,
                terms=terms,
                vector=vector,
            )
        return await super().search_candidates(
            agent,
            query,
            pool=pool,
            dense=dense,
            neighbours=neighbours,
            hops=hops,
            terms=terms,
            vector=vector,
        )

    async def archive(
        self,
        agent_id: str,
        ids: Sequence[str],
        *,
        reason: str,
        actor: str | None = None,
        consolidated_into: str | None = None,
    ) -> dict[str, str]:
        """Archive durable memories (original id -> archive id); WORKING ones are deleted.

        Working memory is never persisted, so retention and caps drop it from process memory
        rather than copy it into the durable archive; like unknown ids, those are not in the
        result.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        kept = [mid for mid in ids if not await self._scratch.delete(agent, mid)]
        if not kept:
            return {}
        durable: Any = self._default
        extra = {} if consolidated_into is None else {"consolidated_into": consolidated_into}
        found: dict[str, str] = await durable.archive(
            agent, kept, reason=reason, actor=actor, **extra
        )
        return found


def _without_working(query: MemoryQuery) -> MemoryQuery:
    cats = frozenset(c for c in (query.categories or ()) if c is not _WORKING)
    return query.model_copy(update={"categories": cats})
