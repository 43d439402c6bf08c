"""In-process backend: the SESSION level and the reference the contract suite compares against.

Nothing is persisted. BM25 uses the same terms and formula as SQLite's FTS5 (collection
statistics over the whole store), so rankings agree with the SQLite backend on the same data.
Shared knowledge lives in the same dictionaries with ``scope=SHARED``; every private read filters
on the scope.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memvault.backends._base import (
    CLEAR,
    DELETE,
    BaseBackend,
    Supersede,
    Vectors,
    append_only_error,
    check_agent,
    check_id,
    check_times,
    embedding_text,
    lexical_text,
)
from memvault.backends._common import check_filters, with_filters
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    CandidateSet,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryScope,
    MetadataFilter,
    StoreStats,
    filters_match,
)
from memvault.protocols import Embedder
from memvault.retrieval.bm25 import ROW_EXTRA_TOKENS, bm25_scores, prune_common_terms
from memvault.retrieval.text import tokenize

__all__ = ["InMemoryBackend"]


class InMemoryBackend(BaseBackend):
    """Memories in dictionaries; vectors in a dict of numpy arrays."""

    backend_name = "inmemory"
    _implements_shared = True
    _audits_deletes = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass that replaces delete or clear (the Qdrant/mem0 mirrors) audits them in
        # the deletion's own step only if it says so itself.
        if ("delete" in vars(cls) or "clear" in vars(cls)) and "_audits_deletes" not in vars(cls):
            cls._audits_deletes = False

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        super().__init__(embedder, **kwargs)
        self._entries: dict[str, MemoryEntry] = {}
        self._vectors: dict[str, Vectors] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._lengths: dict[str, int] = {}
        self._doc_freq: Counter[str] = Counter()
        self._total_len = 0
        self._order: dict[str, list[str]] = {}
        # Insertion order of the live shared entries (thread adjacency of shared search).
        self._shared_order: list[str] = []
        self._audit: list[AuditRecord] = []
        self._archive: list[ArchivedEntry] = []
        # Vectors staged by `memvault reindex`, by (memory id, target model id).
        self._staged: dict[tuple[str, str], Vectors] = {}
        self._lock = asyncio.Lock()

    @property
    def location(self) -> str:
        """Always ``memory://``."""
        return "memory://"

    async def connect(self) -> None:
        """Mark the backend usable (there is nothing to open)."""
        self._connected = True

    async def disconnect(self) -> None:
        """Mark the backend closed; the data stays until the object is dropped."""
        self._connected = False

    async def health_check(self) -> bool:
        """True while connected."""
        return self._connected

    # -- writes ---------------------------------------------------------------------------------

    def _index(self, entry: MemoryEntry, vector: Vectors) -> None:
        terms = Counter(tokenize(lexical_text(entry)))
        self._entries[entry.id] = entry
        self._vectors[entry.id] = vector
        self._terms[entry.id] = terms
        self._lengths[entry.id] = sum(terms.values())
        self._doc_freq.update(terms.keys())
        self._total_len += self._lengths[entry.id]
        if entry.scope is MemoryScope.PRIVATE:
            self._order.setdefault(entry.agent_id, []).append(entry.id)
        elif entry.scope is MemoryScope.SHARED and entry.retracted_at is None:
            self._shared_order.append(entry.id)

    def _unindex(self, entry_id: str) -> None:
        entry = self._entries.pop(entry_id, None)
        if entry is not None and entry.scope is MemoryScope.PRIVATE:
            self._order[entry.agent_id].remove(entry_id)
        self._vectors.pop(entry_id, None)
        terms = self._terms.pop(entry_id, Counter())
        self._doc_freq.subtract(terms.keys())
        self._doc_freq += Counter()  # drop zero counts
        self._total_len -= self._lengths.pop(entry_id, 0)

    async def _insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        async with self._lock:
            self._apply_insert(entries, vectors, supersedes)

    def _apply_insert(
        self, entries: Sequence[MemoryEntry], vectors: Vectors, supersedes: Sequence[Supersede]
    ) -> None:
        # No await inside: a concurrent search sees all of the insert or none of it.
        for entry, vector in zip(entries, vectors, strict=True):
            self._index(entry, np.array(vector, dtype=np.float32))
        for s in supersedes:
            old = self._entries.get(s.old_id)
            if old is not None:
                self._entries[s.old_id] = old.model_copy(
                    update={"valid_to": s.when, "superseded_by": s.new_id}
                )

    async def _existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {i for i in ids if i in self._entries}

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory of the agent (audited with it, as one step)."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        audit = self._deletion_audit(agent)
        async with self._lock:
            entry = self._entries.get(mid)
            if entry is None or entry.agent_id != agent:
                return False
            if entry.scope is not MemoryScope.PRIVATE:
                raise append_only_error(mid)
            self._unindex(mid)
            self._audit.append(audit(DELETE, mid, {}))
            return True

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category), audited with it."""
        agent = check_agent(agent_id)
        self._require_connected()
        audit = self._deletion_audit(agent)
        async with self._lock:
            doomed = [
                e.id
                for e in self._entries.values()
                if e.agent_id == agent
                and e.scope is MemoryScope.PRIVATE
                and (category is None or e.category is category)
            ]
            for entry_id in doomed:
                self._unindex(entry_id)
            if doomed:
                what = {
                    "count": len(doomed),
                    "category": None if category is None else category.value,
                }
                self._audit.append(audit(CLEAR, None, what))
            return len(doomed)

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Bump access counters."""
        agent = check_agent(agent_id)
        times = check_times(times)
        async with self._lock:
            for entry_id in ids:
                e = self._entries.get(entry_id)
                if e is not None and e.agent_id == agent:
                    self._entries[entry_id] = e.model_copy(
                        update={"access_count": e.access_count + times, "last_accessed_at": when}
                    )

    async def mark_consolidated(self, agent_id: str, ids: Sequence[str], when: datetime) -> None:
        """Set ``consolidated_at`` of the agent's entries among ``ids``."""
        agent = check_agent(agent_id)
        async with self._lock:
            for entry_id in ids:
                e = self._entries.get(entry_id)
                if e is not None and e.agent_id == agent:
                    self._entries[entry_id] = e.model_copy(update={"consolidated_at": when})

    # -- reads ----------------------------------------------------------------------------------

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        entry = self._entries.get(mid)
        return entry if entry is not None and entry.agent_id == agent else None

    async def count(
        self,
        agent_id: str,
        *,
        category: MemoryCategory | None = None,
        filters: Sequence[MetadataFilter] = (),
    ) -> int:
        """Number of memories of the agent (of one category, passing the metadata filters)."""
        agent = check_agent(agent_id)
        wanted = check_filters(filters)
        self._require_connected()
        return sum(
            1
            for e in self._entries.values()
            if e.agent_id == agent
            and e.scope is MemoryScope.PRIVATE
            and (category is None or e.category is category)
            and (not wanted or filters_match(wanted, e.metadata.extra))
        )

    def _matching(self, agent_id: str, query: MemoryQuery, now: datetime) -> list[MemoryEntry]:
        return [
            e
            for e in self._entries.values()
            if e.agent_id == agent_id and e.scope is MemoryScope.PRIVATE and query.matches(e, now)
        ]

    async def list_entries(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        offset: int = 0,
        filters: Sequence[MetadataFilter] = (),
    ) -> list[MemoryEntry]:
        """Entries passing the filters (``query.filters`` and ``filters``), newest first."""
        agent = check_agent(agent_id)
        query = with_filters(query, filters)
        self._require_connected()
        rows = self._matching(agent, query, self._clock())
        rows.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return rows[offset : offset + query.limit]

    async def _candidates(
        self,
        agent_id: str,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        return self._search_live(self._matching(agent_id, query, now), vector, terms, pool)

    def _search_live(
        self, live: list[MemoryEntry], vector: Vectors | None, terms: list[str], pool: int
    ) -> CandidateSet:
        """Dense and BM25 top ``pool`` among ``live`` (BM25 statistics of the whole store)."""
        cands = CandidateSet(query_vector=vector, searched=None if vector is None else len(live))
        if vector is not None and live:
            matrix = np.stack([self._vectors[e.id] for e in live])
            sims = matrix @ vector
            # Ties go to the newer entry (ids sort by creation), as in the SQLite backend.
            id_rank = np.argsort(np.argsort(np.array([e.id for e in live])))
            order = np.lexsort((-id_rank, -sims))[:pool]
            cands.dense = [(live[i].id, float(sims[i])) for i in order]
        terms = prune_common_terms(terms, self._doc_freq, len(self._entries))
        if terms and live:
            n = len(self._entries)
            extra = ROW_EXTRA_TOKENS
            docs = ((e.id, self._terms[e.id], self._lengths[e.id] + extra) for e in live)
            scored = bm25_scores(
                terms,
                docs,
                doc_count=n,
                avg_len=(self._total_len + extra * n) / n if n else 0.0,
                doc_freq=self._doc_freq,
            )
            cands.lexical = scored[:pool]
        for entry_id, _ in [*cands.dense, *cands.lexical]:
            cands.entries[entry_id] = self._entries[entry_id]
            cands.vectors[entry_id] = self._vectors[entry_id]
        return cands

    async def _adjacent(
        self, agent_id: str, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        order = self._order.get(agent_id, [])
        position = {entry_id: i for i, entry_id in enumerate(order)}
        out: dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]] = {}
        for entry_id in ids:
            i = position.get(entry_id)
            if i is None:
                continue
            before = [self._entries[order[j]] for j in range(i - 1, max(i - 1 - hops, -1), -1)]
            after = [self._entries[order[j]] for j in range(i + 1, min(i + 1 + hops, len(order)))]
            out[entry_id] = (before, after)
        return out

    async def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all), oldest first."""
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        rows = [e for e in self._entries.values() if agent is None or e.agent_id == agent]
        rows.sort(key=lambda e: (e.created_at, e.id))
        for e in rows:
            yield e

    async def agent_ids(self) -> list[str]:
        """Every agent id with at least one memory."""
        return sorted({e.agent_id for e in self._entries.values()})

    async def stats(self) -> StoreStats:
        """Counts of the whole store."""
        by_cat = Counter(e.category.value for e in self._entries.values())
        return StoreStats(
            backend=self.backend_name,
            location=self.location,
            total=len(self._entries),
            by_category=dict(by_cat),
            agents=len({e.agent_id for e in self._entries.values()}),
            embedding_model=self._embedder.model_id,
            dimension=self._embedder.dimension,
        )

    # -- bulk transfer (``memvault migrate``) ---------------------------------------------------

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """Copies of the stored vectors of ``ids`` (any agent); unknown ids are left out."""
        self._require_connected()
        return {i: self._vectors[i].copy() for i in dict.fromkeys(ids) if i in self._vectors}

    async def export_in_storage_order(
        self, agent_id: str | None = None
    ) -> AsyncIterator[MemoryEntry]:
        """Every entry (of one agent, or all) in insertion order.

        ``_entries`` is a dict, so it keeps insertion order; updates in place (supersession,
        access counts) do not move an entry.
        """
        agent = check_agent(agent_id) if agent_id is not None else None
        self._require_connected()
        rows = [e for e in self._entries.values() if agent is None or e.agent_id == agent]
        for e in rows:
            yield e

    # -- shared knowledge -----------------------------------------------------------------------

    def _live_shared(self, exclude_agent: str | None) -> list[MemoryEntry]:
        return [
            e
            for e in self._entries.values()
            if e.scope is MemoryScope.SHARED
            and e.retracted_at is None
            and e.agent_id != exclude_agent
        ]

    async def _insert_shared(
        self,
        entries: Sequence[MemoryEntry],
        vectors: Vectors,
        supersedes: Sequence[Supersede],
        audit: Sequence[AuditRecord],
    ) -> None:
        async with self._lock:
            self._apply_insert(entries, vectors, supersedes)
            self._audit.extend(audit)

    async def _shared_candidates(
        self,
        exclude_agent: str | None,
        query: MemoryQuery,
        vector: Vectors | None,
        terms: list[str],
        pool: int,
        now: datetime,
    ) -> CandidateSet:
        live = [e for e in self._live_shared(exclude_agent) if query.matches(e, now)]
        return self._search_live(live, vector, terms, pool)

    async def _shared_adjacent(
        self, ids: Sequence[str], hops: int
    ) -> dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]]:
        order = self._shared_order
        position = {entry_id: i for i, entry_id in enumerate(order)}
        out: dict[str, tuple[list[MemoryEntry], list[MemoryEntry]]] = {}
        for entry_id in ids:
            i = position.get(entry_id)
            if i is None:
                continue
            before = [self._entries[order[j]] for j in range(i - 1, max(i - 1 - hops, -1), -1)]
            after = [self._entries[order[j]] for j in range(i + 1, min(i + 1 + hops, len(order)))]
            out[entry_id] = (before, after)
        return out

    async def _list_shared(
        self, exclude_agent: str | None, query: MemoryQuery, offset: int
    ) -> list[MemoryEntry]:
        now = self._clock()
        rows = [e for e in self._live_shared(exclude_agent) if query.matches(e, now)]
        rows.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return rows[offset : offset + query.limit]

    async def _retract(
        self, agent_id: str, memory_id: str, when: datetime, record: AuditRecord
    ) -> bool:
        async with self._lock:
            entry = self._entries.get(memory_id)
            if (
                entry is None
                or entry.agent_id != agent_id
                or entry.scope is not MemoryScope.SHARED
                or entry.retracted_at is not None
            ):
                return False
            self._entries[memory_id] = entry.model_copy(
                update={"retracted_at": when, "updated_at": when}
            )
            self._shared_order.remove(memory_id)
            self._audit.append(record)
            return True

    async def _audit_records(
        self,
        memory_id: str | None,
        limit: int,
        after: tuple[datetime, str] | None = None,
        *,
        agent_id: str | None = None,
    ) -> list[AuditRecord]:
        rows = [
            r
            for r in self._audit
            if (memory_id is None or r.memory_id == memory_id)
            and (agent_id is None or r.agent_id == agent_id)
            and (after is None or (r.at, r.id) > after)
        ]
        rows.sort(key=lambda r: (r.at, r.id))
        return rows[:limit]

    async def _import_audit(self, records: Sequence[AuditRecord]) -> int:
        async with self._lock:
            known = {r.id for r in self._audit}
            fresh = [r for r in records if r.id not in known]
            self._audit.extend(fresh)
            return len(fresh)

    async def _count_audit(self) -> int:
        return len(self._audit)

    async def _archive_move(
        self, agent_id: str, records: Sequence[ArchivedEntry], audit: Sequence[AuditRecord]
    ) -> None:
        async with self._lock:
            for r in records:
                entry = self._entries.get(r.memory_id)
                if entry is None or entry.agent_id != agent_id:
                    continue
                self._archive.append(r)
                self._unindex(r.memory_id)
            self._audit.extend(audit)

    async def _archive_rows(
        self, agent_id: str | None, memory_id: str | None, limit: int, offset: int
    ) -> list[ArchivedEntry]:
        rows = [
            r
            for r in self._archive
            if (agent_id is None or r.agent_id == agent_id)
            and (memory_id is None or r.memory_id == memory_id)
        ]
        rows.sort(key=lambda r: (r.archived_at, r.archive_id), reverse=True)
        return rows[offset : offset + limit]

    async def _archive_import(self, records: Sequence[ArchivedEntry]) -> int:
        async with self._lock:
            known = {r.archive_id for r in self._archive}
            fresh = [r for r in records if r.archive_id not in known]
            self._archive.extend(fresh)
            return len(fresh)

    async def _archive_count(self) -> int:
        return len(self._archive)

    async def _archive_drop(self, archive_id: str) -> None:
        async with self._lock:
            self._archive = [r for r in self._archive if r.archive_id != archive_id]

    # -- reindex (ReindexableStore) -------------------------------------------------------------

    async def reindex_status(self, model_id: str) -> tuple[int, int]:
        """``(memories, memories with a staged vector of model_id)``."""
        self._require_connected()
        staged = sum(1 for mid in self._entries if (mid, model_id) in self._staged)
        return len(self._entries), staged

    async def reindex_begin(self, model_id: str) -> None:
        """Drop vectors staged for another model (nothing to create in process)."""
        self._require_connected()
        self._staged = {k: v for k, v in self._staged.items() if k[1] == model_id}

    async def reindex_pending(
        self, model_id: str, limit: int, *, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Up to ``limit`` memories (id, text to embed) with no staged vector, oldest first
        (after memory ``after``; an unknown ``after`` gives an empty page)."""
        self._require_connected()
        out: list[tuple[str, str]] = []
        started = after is None
        for mid, entry in self._entries.items():
            if not started:
                started = mid == after
                continue
            if (mid, model_id) not in self._staged:
                out.append((mid, embedding_text(entry)))
                if len(out) >= limit:
                    break
        return out

    async def reindex_stage(self, model_id: str, vectors: Mapping[str, Vectors]) -> int:
        """Stage vectors by memory id; ids deleted meanwhile are skipped."""
        self._require_connected()
        async with self._lock:
            fresh = {mid: v for mid, v in vectors.items() if mid in self._entries}
            for mid, vector in fresh.items():
                self._staged[(mid, model_id)] = np.array(vector, dtype=np.float32)
            return len(fresh)

    async def reindex_swap(self, embedder: Embedder, embed: Callable[[list[str]], Vectors]) -> int:
        """Embed what is missing, then swap every vector and the embedder in one step."""
        self._require_connected()
        model = embedder.model_id
        async with self._lock:
            missing = [e for mid, e in self._entries.items() if (mid, model) not in self._staged]
            if missing:
                matrix = embed([embedding_text(e) for e in missing])
                for e, vector in zip(missing, matrix, strict=True):
                    self._staged[(e.id, model)] = np.array(vector, dtype=np.float32)
            # No await from here on: a search sees the old vectors and model or the new ones.
            self._vectors = {mid: self._staged[(mid, model)] for mid in self._entries}
            self._staged = {}
            self._embedder = embedder
            return len(missing)
