"""The small protocols every memvault part is written against.

``MemoryBackend``, ``MemoryCapabilities`` and ``SharedKnowledgeStore`` follow the design documents
to the letter so third-party backends written for them plug in. ``MemoryStore`` is what memvault's
own front door (:class:`memvault.AsyncMemory`) needs on top: batched writes, hybrid candidates,
listing and bulk operations. Every built-in backend implements all of them; the contract suite in
:mod:`memvault.testing` checks it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memvault.models import (
    AuditRecord,
    CandidateSet,
    ChatMessage,
    LLMResponse,
    MemoryCategory,
    MemoryEntry,
    MemoryQuery,
    MemoryStoreRequest,
    MetadataFilter,
    StoreStats,
    ToolDefinition,
)

__all__ = [
    "Embedder",
    "LLMProvider",
    "MemoryBackend",
    "MemoryCapabilities",
    "MemoryInjectionStrategy",
    "MemoryStore",
    "ReindexableStore",
    "RowTableStore",
    "SharedKnowledgeStore",
    "SharedMemoryStore",
]

Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors.

    Implementations are synchronous and CPU/IO bound; async callers run them in a worker thread.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model (recorded in every store built with it)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Embed passages to store; returns an array of shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """Embed one search query; returns an array of shape ``(dimension,)``."""
        ...


@runtime_checkable
class LLMProvider(Protocol):
    """Anything that can complete a chat conversation (consolidation, proposals, reformulation).

    Implementations raise :class:`memvault.llm.errors.ProviderError` (or a subclass) on failure
    and never any transport-specific exception.
    """

    @property
    def model_id(self) -> str:
        """A stable identifier of the model answering the requests."""
        ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """Return the model's reply to ``messages``.

        ``json_schema``, when given, asks the provider to constrain the reply to JSON matching
        it; providers that cannot enforce it still return text, so callers must validate (which
        :func:`complete_json` does).
        """
        ...


@runtime_checkable
class MemoryBackend(Protocol):
    """Lifecycle and CRUD of agent memory storage (the design documents' protocol)."""

    async def connect(self) -> None:
        """Open the backend (idempotent). Raises MemoryConnectionError."""
        ...

    async def disconnect(self) -> None:
        """Release every resource (idempotent)."""
        ...

    async def health_check(self) -> bool:
        """True if the backend answers a trivial query."""
        ...

    @property
    def is_connected(self) -> bool:
        """True between ``connect()`` and ``disconnect()``."""
        ...

    @property
    def backend_name(self) -> str:
        """Short name of the backend (``sqlite``, ``inmemory``, ``postgresql`` ...)."""
        ...

    async def store(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Store one memory and return its id. Raises MemoryConnectionError, MemoryStoreError."""
        ...

    async def retrieve(self, agent_id: str, query: MemoryQuery) -> tuple[MemoryEntry, ...]:
        """Search an agent's memories. Raises MemoryConnectionError, MemoryRetrievalError."""
        ...

    async def get(self, agent_id: str, memory_id: str) -> MemoryEntry | None:
        """One memory of the agent, or None. Raises MemoryConnectionError, MemoryRetrievalError."""
        ...

    async def delete(self, agent_id: str, memory_id: str) -> bool:
        """Delete one memory; False if absent. Raises MemoryConnectionError, MemoryStoreError."""
        ...

    async def count(
        self,
        agent_id: str,
        *,
        category: MemoryCategory | None = None,
        filters: Sequence[MetadataFilter] = (),
    ) -> int:
        """Number of memories of the agent (passing the metadata filters).

        Raises MemoryConnectionError, MemoryRetrievalError.
        """
        ...


@runtime_checkable
class MemoryCapabilities(Protocol):
    """What a backend supports, so callers can check before they ask."""

    @property
    def supported_categories(self) -> frozenset[MemoryCategory]:
        """Categories the backend stores."""
        ...

    @property
    def supports_graph(self) -> bool:
        """True if the backend keeps a graph of entities."""
        ...

    @property
    def supports_temporal(self) -> bool:
        """True if validity intervals and as-of queries are supported."""
        ...

    @property
    def supports_vector_search(self) -> bool:
        """True if dense vector search is supported."""
        ...

    @property
    def supports_shared_access(self) -> bool:
        """True if the backend implements :class:`SharedKnowledgeStore`."""
        ...

    @property
    def max_memories_per_agent(self) -> int | None:
        """The per-agent cap the backend enforces, or None."""
        ...


@runtime_checkable
class SharedKnowledgeStore(Protocol):
    """Knowledge published by one agent for every agent of the same tenant."""

    async def publish(self, agent_id: str, request: MemoryStoreRequest) -> str:
        """Publish a shared memory authored by ``agent_id``; returns its id."""
        ...

    async def search_shared(
        self, query: MemoryQuery, *, exclude_agent: str | None = None
    ) -> tuple[MemoryEntry, ...]:
        """Search shared knowledge, optionally leaving out one author's entries."""
        ...

    async def retract(self, agent_id: str, memory_id: str) -> bool:
        """Retract a shared memory its author published; False if absent or not theirs."""
        ...


@runtime_checkable
class MemoryStore(MemoryBackend, MemoryCapabilities, Protocol):
    """Everything :class:`memvault.AsyncMemory` needs from a backend."""

    @property
    def embedder(self) -> Embedder:
        """The embedder the backend indexes with."""
        ...

    @property
    def location(self) -> str:
        """Where the data lives (a path, a URL without password, ``memory://``)."""
        ...

    async def store_many(
        self,
        agent_id: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        vectors: Sequence[Vectors] | None = None,
    ) -> list[str]:
        """Store several memories in one transaction; ids in input order. All or nothing.

        ``vectors`` (optional) are the requests' document embeddings by this store's embedder,
        computed by the caller; the store then does not embed them again.
        """
        ...

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
        """Dense and lexical top-``pool`` candidates of ``query.text`` passing the filters.

        ``terms`` replaces the analysed words of ``query.text`` for the lexical side (already
        analysed terms, e.g. from query expansion). ``vector`` is ``query.text``'s embedding
        when the caller has it already (the write path embeds a batch at once), so it is not
        embedded again.

        ``dense=False`` skips the query embedding; ``neighbours`` > 0 fetches up to ``hops``
        thread neighbours on each side of that many top lexical and top dense candidates
        (``CandidateSet.neighbours``).
        """
        ...

    async def list_entries(
        self,
        agent_id: str,
        query: MemoryQuery,
        *,
        offset: int = 0,
        filters: Sequence[MetadataFilter] = (),
    ) -> list[MemoryEntry]:
        """Entries passing the query's filters (and ``filters``), newest first.

        ``query.text`` is ignored.
        """
        ...

    async def clear(self, agent_id: str, *, category: MemoryCategory | None = None) -> int:
        """Delete every memory of the agent (of one category); returns how many."""
        ...

    def export_entries(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every stored entry (of one agent, or all), oldest first."""
        ...

    async def import_entries(self, entries: Sequence[MemoryEntry]) -> int:
        """Insert entries keeping their ids and timestamps; existing ids are skipped.

        Returns how many were inserted. All or nothing.
        """
        ...

    async def record_access(
        self, agent_id: str, ids: Sequence[str], when: datetime, *, times: int = 1
    ) -> None:
        """Add ``times`` to the access counters of retrieved entries (feeds retention scoring)."""
        ...

    async def agent_ids(self) -> list[str]:
        """Every agent id that has at least one memory."""
        ...

    async def stats(self) -> StoreStats:
        """Counts for ``memvault stats``."""
        ...

    # -- bulk transfer (``memvault migrate``) -------------------------------------------------

    async def export_vectors(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """The stored vectors of ``ids`` (of any agent), bit-exact; unknown ids are left out.

        Each vector is a float32 array of shape ``(embedder.dimension,)``.
        """
        ...

    async def import_with_vectors(
        self, entries: Sequence[MemoryEntry], vectors: Mapping[str, Vectors]
    ) -> int:
        """Like :meth:`import_entries`, but store ``vectors[entry.id]`` as-is (no re-embedding).

        The caller guarantees the vectors come from this store's embedding model; every entry
        needs one of the embedder's dimension (MemoryValidationError otherwise). Existing ids
        are skipped; returns how many were inserted. All or nothing.
        """
        ...

    def export_in_storage_order(self, agent_id: str | None = None) -> AsyncIterator[MemoryEntry]:
        """Every stored entry (of one agent, or all) in the order the store inserted them.

        Thread adjacency (context expansion) and score tie-breaks follow insertion order, so a
        copy inserted in this order searches exactly like the original.
        """
        ...


@runtime_checkable
class RowTableStore(Protocol):
    """Optional extra tables of a store (archive, audit ...) that ``memvault migrate`` copies.

    Rows are JSON-compatible dicts (the same shape on every backend) with a unique key column,
    so a copy is idempotent. Migration copies every table both stores name, after the memories.
    """

    def row_tables(self) -> Sequence[str]:
        """Names of the extra tables this store has."""
        ...

    def export_rows(self, table: str) -> AsyncIterator[dict[str, Any]]:
        """Every row of ``table`` in key order."""
        ...

    async def import_rows(self, table: str, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert rows keeping their keys; rows whose key exists are skipped; returns inserted."""
        ...

    async def count_rows(self, table: str) -> int:
        """Number of rows in ``table``."""
        ...


@runtime_checkable
class ReindexableStore(Protocol):
    """A store whose vectors can be re-embedded with another model (``memvault reindex``).

    New vectors go to a staging area keyed by memory and target model id, committed batch by
    batch (so an interrupted run resumes where it stopped); the stored vectors, and the model id
    and dimension the store records, change only in :meth:`reindex_swap`, in one transaction.
    The engine is :func:`memvault.reindex.reindex`.
    """

    @property
    def embedder(self) -> Embedder:
        """The embedder this store indexes with now."""
        ...

    @property
    def location(self) -> str:
        """Where the data lives."""
        ...

    def reindex_use_embedder(self, embedder: Embedder) -> None:
        """Index with ``embedder`` from now on (before ``connect``: open a store built with it)."""
        ...

    async def reindex_status(self, model_id: str) -> tuple[int, int]:
        """``(memories, memories with a staged vector of model_id)``; writes nothing."""
        ...

    async def reindex_begin(self, model_id: str) -> None:
        """Create the staging area; vectors staged for ``model_id`` are kept (a resumed run),
        those of any other model dropped."""
        ...

    async def reindex_pending(
        self, model_id: str, limit: int, *, after: str | None = None
    ) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(memory id, text to embed)`` of memories with no staged vector of
        ``model_id``, in storage order; with ``after``, only memories stored after that one
        (an id the previous page ended with: a page costs the same at the end of a big store
        as at its start). An ``after`` that no longer exists may give an empty page."""
        ...

    async def reindex_stage(self, model_id: str, vectors: Mapping[str, Vectors]) -> int:
        """Stage vectors by memory id in one transaction (ids deleted meanwhile are skipped);
        returns how many were staged."""
        ...

    async def reindex_swap(self, embedder: Embedder, embed: Callable[[list[str]], Vectors]) -> int:
        """In one transaction: embed (with ``embed``) and stage the memories still missing a
        vector of ``embedder``'s model, replace every stored vector by its staged one, record the
        model id and dimension, and drop the staging area. Returns how many were embedded here;
        the store indexes with ``embedder`` afterwards."""
        ...


# -- shared knowledge ---------------------------------------------------------------------------


@runtime_checkable
class SharedMemoryStore(MemoryStore, SharedKnowledgeStore, Protocol):
    """A :class:`MemoryStore` that also keeps the tenant's shared knowledge (every built-in one).

    Shared entries are memories with ``scope=SHARED`` whose ``agent_id`` is their author. They
    never appear in an agent's private reads (``search_candidates``, ``list_entries``, ``count``,
    ``clear``, ``delete``); ``get`` by the author still returns them, retracted or not.
    """

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
        """Like :meth:`MemoryStore.search_candidates`, over live shared entries of any author.

        ``exclude_agent`` leaves out one author's entries.
        """
        ...

    async def audit_log(
        self, *, memory_id: str | None = None, limit: int = 100
    ) -> list[AuditRecord]:
        """Audit records (of one memory, or all), oldest first, at most ``limit``."""
        ...


@runtime_checkable
class MemoryInjectionStrategy(Protocol):
    """How memories reach an agent: injected context, memory tools, or self-edited blocks."""

    async def prepare_messages(
        self, agent_id: str, query_text: str, token_budget: int
    ) -> tuple[ChatMessage, ...]:
        """Messages to place between the system prompt and the task (may be empty).

        Raises:
            MemoryValidationError: blank ``agent_id``/``query_text`` or ``token_budget`` < 1.
        """
        ...

    def get_tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """Tools the agent may call to reach its memory (empty for pure context injection)."""
        ...

    async def handle_tool_call(self, agent_id: str, name: str, arguments: Any) -> str:
        """Run one tool call of the model; a bad call gives an ``error: ...`` string."""
        ...

    @property
    def strategy_name(self) -> str:
        """Short name of the strategy (``context``, ``tool_based``, ``self_editing``)."""
        ...
