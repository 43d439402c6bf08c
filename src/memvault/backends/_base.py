"""Logic every built-in backend shares; subclasses only do I/O.

:class:`BaseBackend` validates input, builds entries, embeds in batches and runs the ranking
pipeline; a subclass implements the storage primitives (``_insert``, ``_candidates``, ``get`` ...).
This keeps validation and ranking identical across SQLite, PostgreSQL and in-memory stores.

This module holds the core (private memories: writes, reads, search, bulk transfer). Shared
knowledge, the archive, the audit log and the ``memvault migrate`` row tables are in
:mod:`memvault.backends._side`, mixed into :class:`BaseBackend`; the validators are in
:mod:`memvault.backends._validate` and the value types in :mod:`memvault.backends._common`.
Every name those modules define for backends is re-exported here, so imports from
``memvault.backends._base`` keep working.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memvault._actor import audit_actor, audit_details
from memvault._ids import new_id, utc_now
from memvault._inline import run_blocking
from memvault._search import retrieve_entries
from memvault.backends._common import (
    SHARED_KEY,
    Supersede,
    embedding_text,
    lexical_text,
    metadata_json,
)
from memvault.backends._common import Vectors as Vectors
from memvault.backends._side import PUBLISH as PUBLISH
from memvault.backends._side import RETRACT as RETRACT
from memvault.backends._side import SharedArchiveAuditMixin
from memvault.backends._validate import (
    append_only_error,
    check_agent,
    check_id,
    check_stored_model,
    check_times,
)
from memvault.backends._validate import as_dict as as_dict
from memvault.backends._validate import model_error as model_error
from memvault.errors import (
    MemoryCapabilityError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryValidationError,
)
from memvault.models import (
    DEFAULT_MAX_CONTENT_CHARS,
    AuditRecord,
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryScope,
    MemoryStoreRequest,
    MetadataFilter,
    StoreStats,
    check_content,
)
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig, get_preset
from memvault.retrieval.text import query_terms
from memvault.retrieval.threads import neighbour_anchors, same_thread, thread_key

__all__ = [
    "CLEAR",
    "DELETE",
    "SHARED_KEY",
    "BaseBackend",
    "Supersede",
    "append_only_error",
    "check_agent",
    "check_id",
    "check_stored_model",
    "check_times",
    "embedding_text",
    "lexical_text",
    "same_thread",
    "thread_key",
]

logger = logging.getLogger(__name__)

DELETE = "memory.delete"
"""Audit action of ``delete`` (written in the deletion's transaction by stores that can)."""
CLEAR = "memory.clear"
"""Audit action of ``clear`` (likewise)."""
_SELF_AUDITED = frozenset({DELETE, CLEAR})
_SELF_AUDITED_KEPT = 1024
"""How many self-audited deletions are remembered for :meth:`BaseBackend.record_audit` to
recognise. Callers that know the store audits deletions (``audits_deletions``) pass no record
at all, so without a bound every deletion would leave an entry behind for the life of the
process; a caller that does pass one passes it right after the deletion, well inside it."""


class BaseBackend(SharedArchiveAuditMixin, ABC):
    """Shared behaviour of memvault's backends (see module docstring)."""

    backend_name: str = "base"
    _implements_shared: bool = False
    """True in subclasses that implement the shared-knowledge primitives (``_insert_shared``...)."""
    _audits_deletes: bool = False
    """True in subclasses whose ``delete``/``clear`` write their audit record in the deletion's
    own transaction (see :meth:`_deletion_audit`)."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_content_chars: int = DEFAULT_MAX_CONTENT_CHARS,
        max_memories_per_agent: int | None = None,
        preset: RetrievalConfig | str = "default",
        clock: Callable[[], datetime] = utc_now,
        shared_knowledge: bool = True,
    ) -> None:
        self._shared_enabled = shared_knowledge
        self._embedder = embedder
        self._max_content_chars = max_content_chars
        self._max_per_agent = max_memories_per_agent
        self._preset = get_preset(preset) if isinstance(preset, str) else preset
        self._clock = clock
        self._connected = False
        # Deletions this store audited itself, not yet matched by the record a caller passes
        # to record_audit (see _deletion_audit).
        # Bounded (oldest dropped first): see _SELF_AUDITED_KEPT.
        self._self_audited: OrderedDict[tuple[str, str, str | None], int] = OrderedDict()

    # -- capabilities ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder this backend indexes with."""
        return self._embedder

    @property
    def is_connected(self) -> bool:
        """True between ``connect()`` and ``disconnect()``."""
        return self._connected

    def reindex_use_embedder(self, embedder: Embedder) -> None:
        """Index with ``embedder`` from now on (``memvault reindex``: see
        :class:`~memvault.protocols.ReindexableStore`).

        Before ``connect`` it opens a store built with that model; the reindex swap calls it
        once the store holds the new model's vectors. Nothing is re-embedded here.
        """
        self._embedder = embedder

    @property
    def supported_categories(self) -> frozenset[MemoryCategory]:
        """Every category is stored."""
        return frozenset(MemoryCategory)

    @property
    def supports_graph(self) -> bool:
        """No entity graph yet."""
        return False

    @property
    def supports_temporal(self) -> bool:
        """Validity intervals and as-of queries are supported."""
        return True

    @property
    def supports_vector_search(self) -> bool:
        """Dense search is supported."""
        return True

    @property
    def supports_shared_access(self) -> bool:
        """True if this backend keeps shared knowledge and it is enabled (the default)."""
        return self._implements_shared and self._shared_enabled

    @property
    def max_memories_per_agent(self) -> int | None:
        """The configured per-agent cap (enforced by the write path), or None."""
        return self._max_per_agent

    @property
    @abstractmethod
    def location(self) -> str:
        """Where the data lives."""

    # -- lifecycle ------------------------------------------------------------------------------

    @abstractmethod
    async def connect(self) -> None:
        """Open the backend (idempotent)."""

    @abstractmethod
    async def disconnect(self) -> None:
        """Release every resource (idempotent)."""

    @abstractmethod
    async def health_check(self) -> bool:
        """True if the backend answers."""

    def _require_connected(self) -> None:
        if not self._connected:
            msg = f"{self.backend_name} backend is not connected: call connect() first"
            raise MemoryConnectionError(msg)

    # -- deletion audit -------------------------------------------------------------------------

    @property
    def audits_deletions(self) -> bool:
        """True if ``delete``/``clear`` write their audit record in the deletion's own
        transaction (SQLite, PostgreSQL, in-memory); otherwise the caller audits them after."""
        return self._audits_deletes

    def _deletion_audit(
        self, agent_id: str
    ) -> Callable[[str, str | None, dict[str, Any]], AuditRecord]:
        """A maker of the audit record of a ``delete``/``clear`` the caller is about to commit.

        A deletion and its audit record commit in one transaction, so a crash between them can
        never leave an unaudited delete. The actor and stated reason are read now, in the
        caller's task (a worker thread does not see the context variables that carry them); the
        record is made inside the transaction, once the number of deleted rows is known.

        Callers one layer up (``AsyncMemory.delete``/``clear``) still pass their own record of
        the same deletion to :meth:`record_audit`; it is recognised there and not written twice.
        """
        actor = audit_actor(agent_id)
        reason = audit_details()

        def make(action: str, memory_id: str | None, details: dict[str, Any]) -> AuditRecord:
            key = (action, agent_id, memory_id)
            self._self_audited[key] = self._self_audited.get(key, 0) + 1
            self._self_audited.move_to_end(key)
            while len(self._self_audited) > _SELF_AUDITED_KEPT:
                self._self_audited.popitem(last=False)
            return AuditRecord(
                id=new_id(),
                at=self._clock(),
                actor=actor,
                action=action,
                agent_id=agent_id,
                memory_id=memory_id,
                details={**details, **reason},
            )

        return make

    async def record_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records (for operations audited outside a store transaction).

        A ``memory.delete``/``memory.clear`` record of a deletion this store already audited in
        the deletion's transaction is skipped, so every deletion has exactly one record.
        """
        fresh: list[AuditRecord] = []
        for r in records:
            key = (r.action, r.agent_id or "", r.memory_id)
            pending = self._self_audited.get(key, 0) if r.action in _SELF_AUDITED else 0
            if pending > 0:
                if pending == 1:
                    del self._self_audited[key]
                else:
                    self._self_audited[key] = pending - 1
                continue
            fresh.append(r)
        await super().record_audit(fresh)

    async def audit_for_agent(
        self, agent_id: str, *, after: tuple[datetime, str] | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """The audit records about ``agent_id``, oldest first (by time, then id), at most
        ``limit``; ``after`` is the ``(at, id)`` of the last record of the previous page.

        Served by an index on (agent, time) in SQLite and PostgreSQL.
        """
        agent = check_agent(agent_id)
        if limit < 1:
            msg = "limit must be >= 1"
            raise MemoryValidationError(msg)
        self._require_connected()
        if not self._implements_shared:
            msg = f"{self.backend_name} has no audit log"
            raise MemoryCapabilityError(msg)
        fetch: Any = self._audit_records  # backends with an audit log take agent_id
        records: list[AuditRecord] = await fetch(None, limit, after, agent_id=agent)
        return records

    # -- writes ---------------------------------------------------------------------------------

    @property
    def max_content_chars(self) -> int:
        """The longest content this store accepts."""
        return self._max_content_chars

    def check_request(self, request: MemoryStoreRequest, now: datetime) -> None:
        """Raise MemoryValidationError if ``store`` would refuse ``request`` (nothing written)."""
        self._new_entry("check", request, now)

    def _new_entry(
        self,
        agent_id: str,
        request: MemoryStoreRequest,
        now: datetime,
        scope: MemoryScope = MemoryScope.PRIVATE,
    ) -> MemoryEntry:
        try:
            check_content(request.content, max_chars=self._max_content_chars)
        except ValueError as exc:
            raise MemoryValidationError(str(exc)) from None
        created = request.created_at or now
        if request.expires_at is not None and request.expires_at <= created:
            msg = "expires_at must be later than created_at"
            raise MemoryValidationError(msg)
        return MemoryEntry(
            id=new_id(),
            agent_id=agent_id,
            category=request.category,
            content=request.content,
            metadata=request.metadata,
            created_at=created,
            updated_at=now,
            expires_at=request.expires_at,
            valid_from=request.valid_from,
            scope=scope,
        )

    async def store(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Store one memory and return its id."""
        return (await self.store_many(agent_id, [request]))[0]

    async def store_many(
        self,
        agent_id: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        vectors: Sequence[Vectors] | None = None,
    ) -> list[str]:
        """Validate, embed in one batch, and insert all requests in one transaction.

        ``vectors`` are the requests' embeddings when the caller already computed them with
        this store's embedder (the write planner does), so they are not computed twice.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        if not requests:
            return []
        for r in requests:
            if r.scope is not MemoryScope.PRIVATE:
                # Shared knowledge is append-only and audited: it goes through publish().
                msg = f"store() writes private memories; use publish() for scope {r.scope.value!r}"
                raise MemoryValidationError(msg)
        now = self._clock()
        entries = [self._new_entry(agent, r, now) for r in requests]
        supersedes: list[Supersede] = []
        for req, entry in zip(requests, entries, strict=True):
            if req.supersedes is not None:
                old = await self.get(agent, req.supersedes)
                if old is None or old.scope is not MemoryScope.PRIVATE:
                    msg = f"cannot supersede {req.supersedes!r}: no such memory for this agent"
                    raise MemoryNotFoundError(msg)
                supersedes.append(Supersede(req.supersedes, entry.id, entry.created_at))
        if vectors is None:
            matrix = await self._embed([embedding_text(e) for e in entries])
        else:
            if len(vectors) != len(entries):
                msg = f"{len(vectors)} vectors for {len(entries)} requests"
                raise MemoryValidationError(msg)
            matrix = np.stack([self._check_vector(f"item {i}", v) for i, v in enumerate(vectors)])
        if self._implements_shared:
            # Every write is audited in its own transaction: store, and supersede when it closes
            # an older entry.
            audit = [
                AuditRecord(
                    id=new_id(),
                    at=now,
                    actor=audit_actor(agent),
                    action="memory.store",
                    agent_id=agent,
                    memory_id=e.id,
                    details={"category": e.category.value},
                )
                for e in entries
            ]
            audit.extend(
                AuditRecord(
                    id=new_id(),
                    at=now,
                    actor=audit_actor(agent),
                    action="memory.supersede",
                    agent_id=agent,
                    memory_id=s.old_id,
                    details={"superseded_by": s.new_id},
                )
                for s in supersedes
            )
            await self._insert_shared(entries, matrix, supersedes, audit)
        else:
            await self._insert(entries, matrix, supersedes)
        logger.debug("memory.store", extra={"agent_id": agent, "count": len(entries)})
        return [e.id for e in entries]

    async def import_entries(self, entries: Sequence[MemoryEntry]) -> int:
        """Insert entries keeping ids and timestamps; ids already present are skipped."""
        self._require_connected()
        if not entries:
            return 0
        for e in entries:
            try:
                check_content(e.content, max_chars=self._max_content_chars)
                metadata_json(e.metadata.extra)
            except ValueError as exc:
                raise MemoryValidationError(f"memory {e.id}: {exc}") from None
        existing = await self._existing_ids([e.id for e in entries])
        seen: set[str] = set()
        fresh: list[MemoryEntry] = []
        for e in entries:
            if e.id in existing or e.id in seen:
                continue
            seen.add(e.id)
            fresh.append(e.model_copy(update={"relevance_score": None, "score": None}))
        if not fresh:
            return 0
        vectors = await self._embed([embedding_text(e) for e in fresh])
        await self._insert(fresh, vectors, [])
        return len(fresh)

    async def _embed(self, texts: list[str]) -> Vectors:
        vectors = await asyncio.to_thread(self._embedder.embed_documents, texts)
        arr = np.asarray(vectors, dtype=np.float32)
        if arr.shape != (len(texts), self._embedder.dimension):
            msg = (
                f"embedder {self._embedder.model_id} returned shape {arr.shape}, "
                f"expected ({len(texts)}, {self._embedder.dimension})"
            )
            raise MemoryCapabilityError(msg)
        return arr

    # -- reads ----------------------------------------------------------------------------------

    async def retrieve(self, agent_id: str, query: MemoryQuery) -> tuple[MemoryEntry, ...]:
        """Hybrid search with the backend's preset; without text, the newest matching entries.

        ``query.include_shared`` adds the tenant's shared knowledge (ranked together with the
        agent's memories, without the personal boost).
        """
        agent = check_agent(agent_id)
        self._require_connected()
        if query.include_shared:
            self._require_shared()
        return await retrieve_entries(self, agent, query, self._preset, now=self._clock())

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
        """Dense and lexical top-``pool`` candidates for ``query.text`` passing the filters.

        ``terms`` replaces the analysed words of the query on the lexical side; ``vector``, its
        embedding when the caller already has one (it is then not embedded again).

        With ``neighbours`` > 0, the best that many lexical and dense candidates get up to ``hops``
        thread neighbours on each side (the entries stored just before and after them), for
        context expansion.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        text = (query.text or "").strip()
        if not text:
            return CandidateSet()
        qvec: Vectors | None = None
        if dense and vector is not None:
            qvec = self._check_vector("query vector", vector)
        elif dense:
            qvec = np.asarray(
                await run_blocking(self._embedder.embed_query, text), dtype=np.float32
            )
        words = query_terms(text) if terms is None else list(dict.fromkeys(terms))
        if neighbours > 0 and hops > 0:
            return await self._candidates_near(
                agent, query, qvec, words, pool, self._clock(), neighbours, hops
            )
        return await self._candidates(agent, query, qvec, words, pool, self._clock())

    async def _candidates_near(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
        neighbours: int,
        hops: int,
    ) -> CandidateSet:
        """:meth:`_candidates` plus the thread neighbours of the best ``neighbours`` of each list.

        Backends that can find both in one round trip override this (SQLite: one executor call,
        adjacency by position in the loaded matrix).
        """
        cands = await self._candidates(agent_id, query, vector, terms, pool, now)
        if cands.lexical or cands.dense:
            top = neighbour_anchors(cands, neighbours)
            await self._add_neighbours(agent_id, query, cands, top, hops)
        return cands

    async def _add_neighbours(
        self, agent_id: str, query: MemoryQuery, cands: CandidateSet, ids: list[str], hops: int
    ) -> None:
        """Fill ``cands.neighbours`` for ``ids`` (and ``cands.entries`` for the neighbours).

        Walking away from an entry stops at the first entry of another thread; neighbours that
        fail the query's filters are skipped. Adjacency is insertion order per agent.
        """
        adjacent = await self._adjacent(agent_id, ids, hops)
        self._attach_neighbours(query, cands, ids, adjacent)

    def _attach_neighbours(
        self,
        query: MemoryQuery,
        cands: CandidateSet,
        ids: list[str],
        adjacent: Mapping[str, tuple[list[MemoryEntry], list[MemoryEntry]]],
    ) -> None:
        """Record the thread neighbours of ``ids`` found in ``adjacent`` (see _add_neighbours)."""
        now = self._clock()
        for entry_id in ids:
            entry = cands.entries.get(entry_id)
            if entry is None:
                continue
            before, after = adjacent.get(entry_id, ((), ()))
            sides: list[tuple[str, ...]] = []
            for side in (before, after):
                found: list[str] = []
                for other in side:
                    if not same_thread(entry, other):
                        break
                    if query.matches(other, now):
                        cands.entries.setdefault(other.id, other)
                        found.append(other.id)
                sides.append(tuple(found))
            cands.neighbours[entry_id] = (sides[0], sides[1])

    @abstractmethod
    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        """Up to ``hops`` of the agent's entries stored before and after each of ``ids``.

        Both lists are nearest first.
        """

    @abstractmethod
    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        """Dense top-``pool`` by cosine and BM25 top-``pool`` among the agent's live entries."""

    @abstractmethod
    async def _insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        """Insert entries with their vectors and apply supersessions, all in one transaction."""

    @abstractmethod
    async def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` exist (for any agent)."""

    @abstractmethod
    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None."""

    @abstractmethod
    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent; False if it does not exist."""

    @abstractmethod
    async def count(
        self,
        agent_id: str,
        *,
        category: MemoryCategory | None = None,
        filters: Sequence[MetadataFilter] = (),
    ) -> int:
        """Number of stored memories of the agent (live or not) passing the metadata filters."""

    @abstractmethod
    async def list_entries(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        offset: int = 0,
        filters: Sequence[MetadataFilter] = (),
    ) -> list[MemoryEntry]:
        """Entries passing the filters, newest first, at most ``query.limit``.

        ``filters`` are added to ``query.filters`` (all AND together).
        """

    @abstractmethod
    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category)."""

    @abstractmethod
    def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all), oldest first."""

    @abstractmethod
    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters of retrieved entries."""

    @abstractmethod
    async def agent_ids(self) -> list[str]:
        """Every agent id with at least one memory."""

    @abstractmethod
    async def stats(self) -> StoreStats:
        """Counts for ``memvault stats``."""

    # -- bulk transfer (``memvault migrate``) ---------------------------------------------------

    def _check_vector(self, label: str, raw: Any) -> Vectors:
        """``raw`` as a float32 vector of this embedder's dimension, finite; else raise."""
        dim = self._embedder.dimension
        vec = np.asarray(raw, dtype=np.float32)
        if vec.shape != (dim,):
            msg = f"{label}: vector has shape {vec.shape}, expected ({dim},)"
            raise MemoryValidationError(msg)
        if not np.isfinite(vec).all():
            msg = f"{label}: vector has NaN or infinite values"
            raise MemoryValidationError(msg)
        return vec

    async def import_with_vectors(
        self, entries: Sequence[MemoryEntry], vectors: Mapping[str, Vectors]
    ) -> int:
        """Insert entries with the given vectors (no embedding); existing ids are skipped.

        Everything is validated before anything is written: content limits, and one finite
        vector of this embedder's dimension per entry. The vectors are stored as-is, so the
        caller must have checked they come from the same model (``migrate`` does).
        """
        self._require_connected()
        if not entries:
            return 0
        checked: dict[str, Vectors] = {}
        for e in entries:
            try:
                check_content(e.content, max_chars=self._max_content_chars)
                metadata_json(e.metadata.extra)
            except ValueError as exc:
                raise MemoryValidationError(f"memory {e.id}: {exc}") from None
            raw = vectors.get(e.id)
            if raw is None:
                msg = f"memory {e.id}: no vector given"
                raise MemoryValidationError(msg)
            checked[e.id] = self._check_vector(f"memory {e.id}", raw)
        existing = await self._existing_ids([e.id for e in entries])
        fresh: list[MemoryEntry] = []
        for e in entries:
            if e.id in existing:
                continue
            existing.add(e.id)  # a repeated id in the input is inserted once
            fresh.append(e.model_copy(update={"relevance_score": None, "score": None}))
        if not fresh:
            return 0
        matrix = np.stack([checked[e.id] for e in fresh]).astype(np.float32, copy=False)
        await self._insert(fresh, matrix, [])
        return len(fresh)

    @abstractmethod
    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` (any agent), bit-exact; unknown ids are left out."""

    @abstractmethod
    def export_in_storage_order(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) in insertion order."""
