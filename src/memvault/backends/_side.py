"""Shared knowledge, the archive, the audit log and the migrate row tables of BaseBackend.

Everything a backend keeps beside an agent's private memories lives in
:class:`SharedArchiveAuditMixin`: the public operations (``publish``, ``search_shared``,
``retract``, ``archive``, ``restore``, ``audit_log``, ``export_rows`` ...) with their validation
and audit records, and the storage primitives they call (``_insert_shared``,
``_archive_move`` ...), which raise :class:`MemoryCapabilityError` unless a backend implements
them. It is separate from :mod:`memvault.backends._base` (the private-memory core) only to keep
each module readable; :class:`~memvault.backends._base.BaseBackend` composes the two, and
backends subclass BaseBackend as before.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from pydantic import ValidationError

from memvault._actor import audit_actor, audit_details
from memvault._ids import new_id
from memvault._inline import run_blocking
from memvault._search import hybrid_search
from memvault.backends._common import Supersede, Vectors, embedding_text
from memvault.backends._validate import check_agent, check_id, model_error
from memvault.errors import (
    MemoryCapabilityError,
    MemoryNotFoundError,
    MemoryStoreError,
    MemoryValidationError,
)
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    CandidateSet,
    MemoryEntry,
    MemoryQuery,
    MemoryScope,
    MemoryStoreRequest,
)
from memvault.protocols import MemoryStore
from memvault.retrieval.text import query_terms
from memvault.retrieval.threads import neighbour_anchors

if TYPE_CHECKING:
    from memvault.protocols import Embedder
    from memvault.retrieval.presets import RetrievalConfig

__all__ = ["PUBLISH", "RETRACT", "SharedArchiveAuditMixin"]

# The log records keep the logger name they had before this module was split out of _base.
logger = logging.getLogger("memvault.backends._base")

# Archive reasons with an audit action of their own (``memory.evict`` ...); others are
# ``memory.archive`` with the reason in the details.
_ARCHIVE_ACTIONS = frozenset({"evict", "expire", "consolidate"})

PUBLISH = "shared.publish"
"""Audit action of :meth:`BaseBackend.publish`."""
RETRACT = "shared.retract"
"""Audit action of :meth:`BaseBackend.retract`."""


_ROW_PAGE = 1_000


class SharedArchiveAuditMixin:
    """Shared knowledge, archive, audit log and row tables of :class:`BaseBackend`."""

    if TYPE_CHECKING:
        # Provided by BaseBackend (memvault.backends._base), the only class this mixes into.
        backend_name: str
        _implements_shared: bool
        _shared_enabled: bool
        _embedder: Embedder
        _preset: RetrievalConfig
        _clock: Callable[[], datetime]

        def _require_connected(self) -> None: ...

        def _new_entry(
            self,
            agent_id: str,
            request: MemoryStoreRequest,
            now: datetime,
            scope: MemoryScope = MemoryScope.PRIVATE,
        ) -> MemoryEntry: ...

        async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None: ...

        async def _embed(self, texts: list[str]) -> Vectors: ...

        def _attach_neighbours(
            self,
            query: MemoryQuery,
            cands: CandidateSet,
            ids: list[str],
            adjacent: Mapping[str, tuple[list[MemoryEntry], list[MemoryEntry]]],
        ) -> None: ...

    # -- archive --------------------------------------------------------------------------------

    async def archive(
        self,
        agent_id: str,
        ids: Sequence[str],
        *,
        reason: str,
        actor: str | None = None,
        consolidated_into: str | None = None,
    ) -> dict[str, str]:
        """Move the agent's private entries ``ids`` to the archive; returns original -> archive id.

        One transaction: the archive rows, the deletion and the audit records commit together,
        so an entry is always either live or archived. Unknown ids are left out of the result.
        ``consolidated_into`` (consolidation) names the memory that replaced them: each archived
        copy carries it (``MemoryEntry.consolidated_into``) and its audit record names it.
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
        into = None if consolidated_into is None else check_id(consolidated_into)
        if into is not None:
            found = [e.model_copy(update={"consolidated_into": into}) for e in found]
        records = [
            ArchivedEntry(
                archive_id=new_id(), agent_id=agent, reason=reason, archived_at=now, entry=e
            )
            for e in found
        ]
        extra: dict[str, Any] = {} if into is None else {"consolidated_into": into}
        audit = [
            AuditRecord(
                id=new_id(),
                at=now,
                actor=actor or audit_actor(agent),
                action=f"memory.{reason}" if reason in _ARCHIVE_ACTIONS else "memory.archive",
                agent_id=agent,
                memory_id=r.memory_id,
                details=audit_details({"archive_id": r.archive_id, "reason": reason, **extra}),
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
            # Live again: it is no longer represented by the memory it was merged into.
            entry = record.entry.model_copy(update={"consolidated_into": None})
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
            MemoryValidationError: bad content, or ``request.scope`` is ``org`` (org facts are
                written through org memory's write path, one layer up).
            MemoryNotFoundError: ``supersedes`` names no live shared entry of this author.
        """
        agent = check_agent(agent_id)
        self._require_connected()
        self._require_shared()
        if request.scope is MemoryScope.ORG:
            # A store has no notion of org write access (policies human-only, ADRs senior+):
            # org facts are written one layer up, by AsyncMemory.publish(scope="org") or the
            # service's org_write, which check it and then store the fact in the org pool.
            msg = (
                "org knowledge is written through org memory (publish(..., scope='org') on "
                "Memory/AsyncMemory, or org_write), which checks write access; "
                "the store itself only publishes shared knowledge"
            )
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
            cast(MemoryStore, self),  # every BaseBackend is a MemoryStore
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
                await run_blocking(self._embedder.embed_query, text), dtype=np.float32
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
