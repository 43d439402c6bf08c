"""In-process backend: the SESSION level and the reference the contract suite compares against.

Nothing is persisted. BM25 uses the same terms and formula as SQLite's FTS5 (collection
statistics over the whole store), so rankings agree with the SQLite backend on the same data.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memvault.backends._base import (
    BaseBackend,
    Supersede,
    Vectors,
    check_agent,
    check_id,
    lexical_text,
)
from memvault.models import CandidateSet, MemoryCategory, MemoryEntry, MemoryQuery, StoreStats
from memvault.retrieval.bm25 import bm25_scores
from memvault.retrieval.text import tokenize

__all__ = ["InMemoryBackend"]


class InMemoryBackend(BaseBackend):
    """Memories in dictionaries; vectors in a dict of numpy arrays."""

    backend_name = "inmemory"

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        super().__init__(embedder, **kwargs)
        self._entries: dict[str, MemoryEntry] = {}
        self._vectors: dict[str, Vectors] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._lengths: dict[str, int] = {}
        self._doc_freq: Counter[str] = Counter()
        self._total_len = 0
        self._order: dict[str, list[str]] = {}
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
        self._order.setdefault(entry.agent_id, []).append(entry.id)

    def _unindex(self, entry_id: str) -> None:
        entry = self._entries.pop(entry_id, None)
        if entry is not None:
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
        """Delete one memory of the agent."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        async with self._lock:
            entry = self._entries.get(mid)
            if entry is None or entry.agent_id != agent:
                return False
            self._unindex(mid)
            return True

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category)."""
        agent = check_agent(agent_id)
        self._require_connected()
        async with self._lock:
            doomed = [
                e.id
                for e in self._entries.values()
                if e.agent_id == agent and (category is None or e.category is category)
            ]
            for entry_id in doomed:
                self._unindex(entry_id)
            return len(doomed)

    async def record_access(self, agent_id: str, ids: Sequence[str], when: datetime) -> None:
        """Bump access counters."""
        agent = check_agent(agent_id)
        async with self._lock:
            for entry_id in ids:
                e = self._entries.get(entry_id)
                if e is not None and e.agent_id == agent:
                    self._entries[entry_id] = e.model_copy(
                        update={"access_count": e.access_count + 1, "last_accessed_at": when}
                    )

    # -- reads ----------------------------------------------------------------------------------

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None."""
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        self._require_connected()
        entry = self._entries.get(mid)
        return entry if entry is not None and entry.agent_id == agent else None

    async def count(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Number of memories of the agent."""
        agent = check_agent(agent_id)
        self._require_connected()
        return sum(
            1
            for e in self._entries.values()
            if e.agent_id == agent and (category is None or e.category is category)
        )

    def _matching(self, agent_id: str, query: MemoryQuery, now: datetime) -> list[MemoryEntry]:
        return [
            e for e in self._entries.values() if e.agent_id == agent_id and query.matches(e, now)
        ]

    async def list_entries(
        self, agent_id: str, query: MemoryQuery, *, offset: int = 0
    ) -> list[MemoryEntry]:
        """Entries passing the filters, newest first."""
        agent = check_agent(agent_id)
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
        live = self._matching(agent_id, query, now)
        cands = CandidateSet(query_vector=vector)
        if vector is not None and live:
            matrix = np.stack([self._vectors[e.id] for e in live])
            sims = matrix @ vector
            # Ties go to the newer entry (ids sort by creation), as in the SQLite backend.
            id_rank = np.argsort(np.argsort(np.array([e.id for e in live])))
            order = np.lexsort((-id_rank, -sims))[:pool]
            cands.dense = [(live[i].id, float(sims[i])) for i in order]
        if terms and live:
            n = len(self._entries)
            docs = ((e.id, self._terms[e.id], self._lengths[e.id]) for e in live)
            scored = bm25_scores(
                terms,
                docs,
                doc_count=n,
                avg_len=self._total_len / n if n else 0.0,
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
