"""Logic every built-in backend shares; subclasses only do I/O.

:class:`BaseBackend` validates input, builds entries, embeds in batches and runs the ranking
pipeline; a subclass implements the storage primitives (``_insert``, ``_candidates``, ``get`` ...).
This keeps validation and ranking identical across SQLite, PostgreSQL and in-memory stores.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from memvault._actor import audit_actor, audit_details
from memvault._ids import new_id, utc_now
from memvault._search import hybrid_search, retrieve_entries
from memvault.errors import (
    DimensionMismatchError,
    EmbeddingModelChangedError,
    MemoryCapabilityError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryStoreError,
    MemoryValidationError,
)
from memvault.models import (
    DEFAULT_MAX_CONTENT_CHARS,
    ArchivedEntry,
    AuditRecord,
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryScope,
    MemoryStoreRequest,
    StoreStats,
    check_content,
    validate_agent_id,
    validate_memory_id,
)
from memvault.protocols import Embedder
from memvault.retrieval.presets import RetrievalConfig, get_preset
from memvault.retrieval.text import query_terms
from memvault.retrieval.threads import neighbour_anchors, same_thread, thread_key

# Archive reasons with an audit action of their own (``memory.evict`` ...); others are
# ``memory.archive`` with the reason in the details.
_ARCHIVE_ACTIONS = frozenset({"evict", "expire", "consolidate"})

__all__ = [
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

Vectors = NDArray[np.float32]


def check_times(times: int) -> int:
    """An access-count increment: a positive integer.

    Raises:
        MemoryValidationError: anything else.
    """
    if isinstance(times, bool) or not isinstance(times, int) or times < 1:
        msg = f"times must be a positive integer, got {times!r}"
        raise MemoryValidationError(msg)
    return times


def check_agent(agent_id: str) -> str:
    """Validated agent id, or :class:`MemoryValidationError`."""
    try:
        return validate_agent_id(agent_id)
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None


def check_id(memory_id: str) -> str:
    """Validated memory id, or :class:`MemoryValidationError`."""
    try:
        return validate_memory_id(memory_id)
    except ValueError as exc:
        raise MemoryValidationError(str(exc)) from None


def embedding_text(entry: MemoryEntry) -> str:
    """The text a backend embeds for an entry (its content)."""
    return entry.content


def lexical_text(entry: MemoryEntry) -> str:
    """The text a backend indexes for BM25: the content plus the month and year it was created.

    Dates are how people recall events ("what did we ship in May 2023?"), so the human-readable
    date is indexed beside the words; it is analysed like any other text.
    """
    return f"{entry.content} {entry.created_at:%B %Y}"


def check_stored_model(
    location: str,
    embedder: Embedder,
    *,
    stored_model: str | None,
    stored_dimension: int | None,
    has_rows: bool,
) -> None:
    """Refuse to open a store whose vectors come from another model than ``embedder``.

    An empty store may adopt any model (there are no vectors to mix up).

    Raises:
        DimensionMismatchError: the stored vectors have another dimension.
        EmbeddingModelChangedError: same dimension, but another model.
    """
    if stored_model is None or not has_rows:
        return
    model, dim = embedder.model_id, embedder.dimension
    if stored_dimension is not None and stored_dimension != dim:
        msg = (
            f"store {location} holds {stored_dimension}-dimensional vectors from "
            f"{stored_model!r}, but the configured embedder {model!r} makes {dim}: "
            "configure the original model or run `memvault reindex`"
        )
        raise DimensionMismatchError(
            msg,
            stored_model=stored_model,
            configured_model=model,
            stored_dimension=stored_dimension,
            configured_dimension=dim,
        )
    if stored_model != model:
        msg = (
            f"store {location} was built with embedding model {stored_model!r}, "
            f"not {model!r}: configure that model or run `memvault reindex`"
        )
        raise EmbeddingModelChangedError(msg, stored_model=stored_model, configured_model=model)


SHARED_KEY = "\x00shared"
"""Key of the shared scope where backends keep per-scope state keyed by agent id (e.g. SQLite's
vector matrices). Agent ids cannot contain control characters, so it never names a real agent."""

PUBLISH = "shared.publish"
"""Audit action of :meth:`BaseBackend.publish`."""
RETRACT = "shared.retract"
"""Audit action of :meth:`BaseBackend.retract`."""


@dataclass(frozen=True, slots=True)
class Supersede:
    """Mark ``old_id`` as replaced by ``new_id`` from ``when`` on (in the insert's transaction)."""

    old_id: str
    new_id: str
    when: datetime


class BaseBackend(ABC):
    """Shared behaviour of memvault's backends (see module docstring)."""

    backend_name: str = "base"
    _implements_shared: bool = False
    """True in subclasses that implement the shared-knowledge primitives (``_insert_shared``...)."""

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

    # -- capabilities ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The embedder this backend indexes with."""
        return self._embedder

    @property
    def is_connected(self) -> bool:
        """True between ``connect()`` and ``disconnect()``."""
        return self._connected

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

    # -- archive --------------------------------------------------------------------------------

    async def archive(
        self, agent_id: str, ids: Sequence[str], *, reason: str, actor: str | None = None
    ) -> dict[str, str]:
        """Move the agent's private entries ``ids`` to the archive; returns original -> archive id.

        One transaction: the archive rows, the deletion and the audit records commit together,
        so an entry is always either live or archived. Unknown ids are left out of the result.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        self._require_archive()
        now = self._clock()
        found: list[MemoryEntry] = []
        for memory_id in dict.fromkeys(check_id(i) for i in ids):
            entry = await self.get(agent, memory_id)
            if entry is not None and entry.scope is MemoryScope.PRIVATE:
                found.append(entry)
        if not found:
            return {}
        records = [
            ArchivedEntry(
                archive_id=new_id(), agent_id=agent, reason=reason, archived_at=now, entry=e
            )
            for e in found
        ]
        audit = [
            AuditRecord(
                id=new_id(),
                at=now,
                actor=actor or audit_actor(agent),
                action=f"memory.{reason}" if reason in _ARCHIVE_ACTIONS else "memory.archive",
                agent_id=agent,
                memory_id=r.memory_id,
                details=audit_details({"archive_id": r.archive_id, "reason": reason}),
            )
            for r in records
        ]
        await self._archive_move(agent, records, audit)
        return {r.memory_id: r.archive_id for r in records}

    async def archived(
        self,
        agent_id: str,
        *,
        memory_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[ArchivedEntry]:
        """The agent's archived entries (or the archive rows of one memory id), newest first."""
        agent = check_agent(agent_id)
        mid = None if memory_id is None else check_id(memory_id)
        if limit < 1 or offset < 0:
            msg = "limit must be >= 1 and offset >= 0"
            raise MemoryValidationError(msg)
        self._require_connected()
        self._require_archive()
        return await self._archive_rows(agent, mid, limit, offset)

    async def restore(
        self, agent_id: str, memory_id: str, *, actor: str | None = None
    ) -> MemoryEntry:
        """Bring an archived entry back under its original id; returns it.

        The entry is re-inserted (and audited) before its archive row is dropped, so a crash in
        between leaves it live and still archived, never gone; restoring again then only drops
        the archive row.

        Raises:
            MemoryNotFoundError: the agent has no archived entry with that id.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        self._require_archive()
        rows = await self._archive_rows(agent, mid, 1, 0)
        if not rows:
            msg = f"no archived memory {mid!r} for agent {agent!r}"
            raise MemoryNotFoundError(msg)
        record = rows[0]
        now = self._clock()
        if await self.get(agent, mid) is None:
            entry = record.entry
            vectors = await self._embed([embedding_text(entry)])
            audit = AuditRecord(
                id=new_id(),
                at=now,
                actor=actor or audit_actor(agent),
                action="memory.restore",
                agent_id=agent,
                memory_id=mid,
                details=audit_details({"archive_id": record.archive_id, "reason": record.reason}),
            )
            await self._insert_shared([entry], vectors, [], [audit])
        await self._archive_drop(record.archive_id)
        restored = await self.get(agent, mid)
        if restored is None:  # pragma: no cover - the row was just inserted
            msg = f"restored memory {mid!r} is missing"
            raise MemoryStoreError(msg)
        return restored

    def _require_archive(self) -> None:
        if not self._implements_shared:
            msg = f"{self.backend_name} has no archive"
            raise MemoryCapabilityError(msg)

    async def _archive_move(
        self, agent_id: str, records: Sequence[ArchivedEntry], audit: Sequence[AuditRecord]
    ) -> None:
        """Insert archive rows, delete their entries and write ``audit``, in one transaction."""
        raise MemoryCapabilityError(f"{self.backend_name} has no archive")

    async def _archive_rows(
        self, agent_id: str | None, memory_id: str | None, limit: int, offset: int
    ) -> list[ArchivedEntry]:
        """Archive rows of the agent, or of every agent (of one memory id), newest first."""
        raise MemoryCapabilityError(f"{self.backend_name} has no archive")

    async def _archive_import(self, records: Sequence[ArchivedEntry]) -> int:
        """Insert archive rows keeping their ids; known ids are skipped; returns inserted."""
        raise MemoryCapabilityError(f"{self.backend_name} has no archive")

    async def _archive_count(self) -> int:
        """Number of archive rows."""
        raise MemoryCapabilityError(f"{self.backend_name} has no archive")

    async def _archive_drop(self, archive_id: str) -> None:
        """Remove one archive row (after its entry was restored)."""
        raise MemoryCapabilityError(f"{self.backend_name} has no archive")

    async def import_entries(self, entries: Sequence[MemoryEntry]) -> int:
        """Insert entries keeping ids and timestamps; ids already present are skipped."""
        self._require_connected()
        if not entries:
            return 0
        for e in entries:
            try:
                check_content(e.content, max_chars=self._max_content_chars)
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
    ) -> CandidateSet:
        """Dense and lexical top-``pool`` candidates for ``query.text`` passing the filters.

        ``terms`` replaces the analysed words of the query on the lexical side.

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
        if dense:
            qvec = np.asarray(
                await asyncio.to_thread(self._embedder.embed_query, text), dtype=np.float32
            )
        words = query_terms(text) if terms is None else list(dict.fromkeys(terms))
        cands = await self._candidates(agent, query, qvec, words, pool, self._clock())
        if neighbours > 0 and hops > 0 and (cands.lexical or cands.dense):
            top = neighbour_anchors(cands, neighbours)
            await self._add_neighbours(agent, query, cands, top, hops)
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
    async def count(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Number of stored memories of the agent (live or not)."""

    @abstractmethod
    async def list_entries(
        self, agent_id: str, query: MemoryQuery, *, offset: int = 0
    ) -> list[MemoryEntry]:
        """Entries passing the filters, newest first, at most ``query.limit``."""

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

    # -- shared knowledge (SharedKnowledgeStore) ------------------------------------------------
    #
    # Shared entries live beside private ones (same tables, same indexes, same ranking) with
    # ``scope=SHARED`` and ``agent_id`` = their author. They are append-only: publish inserts,
    # retract only marks the row (``retracted_at``) and never deletes it, and both write an
    # audit record in the same transaction. Private reads never see them (scope filter).

    def _require_shared(self) -> None:
        if not self._implements_shared:
            msg = f"the {self.backend_name} backend has no shared knowledge store"
            raise MemoryCapabilityError(msg)
        if not self._shared_enabled:
            msg = "shared knowledge is disabled (memory.options.shared_knowledge_base: false)"
            raise MemoryCapabilityError(msg)

    async def publish(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Publish ``request`` as shared knowledge authored by ``agent_id``; returns its id.

        The entry is visible to every agent of this store (tenant) through
        :meth:`search_shared` and ``include_shared`` searches. ``request.supersedes`` may name
        one of the author's own live shared entries, which then ends where this one starts.

        Raises:
            MemoryCapabilityError: shared knowledge is disabled.
            MemoryValidationError: bad content, or ``request.scope`` is ``org``.
            MemoryNotFoundError: ``supersedes`` names no live shared entry of this author.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        self._require_shared()
        if request.scope is MemoryScope.ORG:
            msg = "organisation memory cannot be published as shared knowledge"
            raise MemoryValidationError(msg)
        now = self._clock()
        entry = self._new_entry(agent, request, now, scope=MemoryScope.SHARED)
        supersedes: list[Supersede] = []
        details: dict[str, Any] = {"category": entry.category.value}
        if request.supersedes is not None:
            old = await self.get(agent, request.supersedes)
            if old is None or old.scope is not MemoryScope.SHARED or old.retracted_at is not None:
                msg = (
                    f"cannot supersede {request.supersedes!r}: no live shared memory of this author"
                )
                raise MemoryNotFoundError(msg)
            supersedes.append(Supersede(old.id, entry.id, entry.created_at))
            details["supersedes"] = old.id
        vectors = await self._embed([embedding_text(entry)])
        record = AuditRecord(
            id=new_id(),
            at=now,
            actor=audit_actor(agent),
            action=PUBLISH,
            agent_id=agent,
            memory_id=entry.id,
            details=details,
        )
        await self._insert_shared([entry], vectors, supersedes, [record])
        logger.debug("memory.publish", extra={"agent_id": agent, "memory_id": entry.id})
        return entry.id

    async def search_shared(
        self, query: MemoryQuery, *, exclude_agent: str | None = None
    ) -> tuple[MemoryEntry, ...]:
        """Search the shared knowledge of the whole store, best first (newest first without text).

        Ranked with the backend's preset like private memories, but without personal boost.
        ``exclude_agent`` leaves out that author's entries; retracted entries never appear.
        """
        exclude = None if exclude_agent is None else check_agent(exclude_agent)
        self._require_connected()
        self._require_shared()
        if not query.text or not query.text.strip():
            return tuple(await self._list_shared(exclude, query, 0))
        ranked = await hybrid_search(
            self,
            None,
            query,
            self._preset,
            now=self._clock(),
            include_shared=True,
            exclude_agent=exclude,
        )
        return tuple(ranked)

    async def retract(self, agent_id: str, memory_id: str) -> bool:
        """Retract a shared entry ``agent_id`` published: hidden from search, kept, audited.

        Returns False (and changes nothing) if the id is not a live shared entry of this
        author: absent, private, another author's, or already retracted.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        self._require_shared()
        now = self._clock()
        record = AuditRecord(
            id=new_id(),
            at=now,
            actor=audit_actor(agent),
            action=RETRACT,
            agent_id=agent,
            memory_id=mid,
            details=audit_details(),
        )
        retracted = await self._retract(agent, mid, now, record)
        if retracted:
            logger.debug("memory.retract", extra={"agent_id": agent, "memory_id": mid})
        return retracted

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
        """Like :meth:`search_candidates`, over the live shared entries of every author.

        Thread neighbours are the shared entries stored just before and after a candidate
        (entries of ``exclude_agent`` are skipped as if absent).
        """
        exclude = None if exclude_agent is None else check_agent(exclude_agent)
        self._require_connected()
        self._require_shared()
        text = (query.text or "").strip()
        if not text:
            return CandidateSet()
        qvec: Vectors | None = None
        if dense:
            qvec = np.asarray(
                await asyncio.to_thread(self._embedder.embed_query, text), dtype=np.float32
            )
        words = query_terms(text) if terms is None else list(dict.fromkeys(terms))
        cands = await self._shared_candidates(exclude, query, qvec, words, pool, self._clock())
        if neighbours > 0 and hops > 0 and (cands.lexical or cands.dense):
            top = neighbour_anchors(cands, neighbours)
            adjacent = await self._shared_adjacent(top, hops)
            if exclude is not None:
                adjacent = {
                    i: (
                        [e for e in before if e.agent_id != exclude],
                        [e for e in after if e.agent_id != exclude],
                    )
                    for i, (before, after) in adjacent.items()
                }
            self._attach_neighbours(query, cands, top, adjacent)
        return cands

    async def audit_log(
        self, *, memory_id: str | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """Audit records (of one memory, or all), oldest first, at most ``limit``."""
        mid = None if memory_id is None else check_id(memory_id)
        if limit < 1:
            msg = "limit must be >= 1"
            raise MemoryValidationError(msg)
        self._require_connected()
        return await self._audit_records(mid, limit)

    # Storage primitives of shared knowledge. They are not abstract so that a backend without
    # shared knowledge (``_implements_shared = False``) needs none of them.

    async def _insert_shared(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        """Like ``_insert``, plus the audit records, all in one transaction."""
        raise MemoryCapabilityError(f"{self.backend_name} has no shared knowledge store")

    async def _shared_candidates(
        self,
        exclude_agent: str | None,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        """Like ``_candidates`` over live (unretracted) shared entries, minus one author's."""
        raise MemoryCapabilityError(f"{self.backend_name} has no shared knowledge store")

    async def _shared_adjacent(
        self, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        """Like ``_adjacent`` in the insertion order of live shared entries (any author)."""
        raise MemoryCapabilityError(f"{self.backend_name} has no shared knowledge store")

    async def _list_shared(
        self, exclude_agent: str | None, query: MemoryQuery, offset: int
    ) -> list[MemoryEntry]:
        """Live shared entries passing the filters, newest first, at most ``query.limit``."""
        raise MemoryCapabilityError(f"{self.backend_name} has no shared knowledge store")

    async def _retract(
        self, agent_id: str, memory_id: str, when: datetime, record: AuditRecord
    ) -> bool:
        """Set ``retracted_at`` of the author's live shared entry and write ``record``, atomically.

        False (nothing written) if there is no such entry.
        """
        raise MemoryCapabilityError(f"{self.backend_name} has no shared knowledge store")

    async def record_audit(self, records: Sequence[AuditRecord]) -> None:
        """Append audit records (for operations audited outside a store transaction)."""
        self._require_connected()
        if records and self._implements_shared:
            await self._import_audit(records)

    async def _audit_records(
        self,
        memory_id: str | None,
        limit: int,
        after: tuple[datetime, str] | None = None,
    ) -> list[AuditRecord]:
        """Audit records, oldest first (by time, then id), after the ``(at, id)`` key if given."""
        raise MemoryCapabilityError(f"{self.backend_name} has no audit log")

    async def _import_audit(self, records: Sequence[AuditRecord]) -> int:
        """Insert audit records keeping their ids; known ids are skipped; returns inserted."""
        raise MemoryCapabilityError(f"{self.backend_name} has no audit log")

    async def _count_audit(self) -> int:
        """Number of audit records."""
        raise MemoryCapabilityError(f"{self.backend_name} has no audit log")

    # -- extra tables for `memvault migrate` (RowTableStore) ------------------------------------

    def row_tables(self) -> Sequence[str]:
        """The extra tables ``memvault migrate`` copies: the audit log and the archive."""
        return ("audit", "archive") if self._implements_shared else ()

    async def export_rows(self, table: str) -> AsyncIterator[dict[str, Any]]:
        """Every row of ``table`` as a JSON object, read in pages."""
        self._check_table(table)
        self._require_connected()
        if table == "archive":
            offset = 0
            while True:
                rows = await self._archive_rows(None, None, _ROW_PAGE, offset)
                for row in rows:
                    yield row.model_dump(mode="json")
                if len(rows) < _ROW_PAGE:
                    return
                offset += len(rows)
        after: tuple[datetime, str] | None = None
        while True:
            page = await self._audit_records(None, _ROW_PAGE, after)
            for record in page:
                yield record.model_dump(mode="json")
            if len(page) < _ROW_PAGE:
                return
            after = (page[-1].at, page[-1].id)

    async def import_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert rows as written by :meth:`export_rows`; known ids are skipped."""
        self._check_table(table)
        self._require_connected()
        try:
            if table == "archive":
                archived = [ArchivedEntry.model_validate(dict(r)) for r in rows]
                return await self._archive_import(archived) if archived else 0
            records = [AuditRecord.model_validate(dict(r)) for r in rows]
        except ValidationError as exc:
            raise model_error(exc) from None
        return await self._import_audit(records) if records else 0

    async def count_rows(self, table: str) -> int:
        """Number of rows of ``table``."""
        self._check_table(table)
        self._require_connected()
        if table == "archive":
            return await self._archive_count()
        return await self._count_audit()

    def _check_table(self, table: str) -> None:
        if table not in self.row_tables():
            msg = f"{self.backend_name} store has no table {table!r}"
            raise MemoryCapabilityError(msg)


_ROW_PAGE = 1_000


def model_error(exc: ValidationError) -> MemoryValidationError:
    """A one-line :class:`MemoryValidationError` from a pydantic error."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    return MemoryValidationError(f"{loc}: {msg}" if loc else msg)


def append_only_error(memory_id: str) -> MemoryValidationError:
    """The error for deleting a shared entry: shared knowledge is append-only."""
    msg = f"memory {memory_id} is shared knowledge, which is append-only: retract it instead"
    return MemoryValidationError(msg)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty dict (for JSON columns)."""
    return value if isinstance(value, dict) else {}
