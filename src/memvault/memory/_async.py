"""``AsyncMemory``: the one front door of memvault (the sync ``Memory`` wraps it, in ``_sync``)."""

from __future__ import annotations

import asyncio
import builtins
import importlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic import ValidationError

from memvault._actor import audit_actor, audit_details
from memvault._ids import new_id, utc_now
from memvault._inputs import (
    CategoryLike,
    check_update,
    conversation_turns,
    is_message,
    parse_category,
    query_filters,
    scope_metadata,
    server_url,
)
from memvault._inputs import aware as _aware
from memvault._inputs import categories as _categories
from memvault._inputs import item_request as _item_request
from memvault._inputs import load_export as _load_export
from memvault._inputs import publish_scope as _publish_scope
from memvault._inputs import store_request as _request
from memvault._search import hybrid_search
from memvault.config import COMPOSITE_URL, InjectionStrategyName, MemvaultConfig, load_config
from memvault.consolidation.service import ConsolidationStrategy
from memvault.errors import (
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryConnectionError,
    MemoryError,
    MemoryNotFoundError,
    MemoryStoreError,
    MemoryValidationError,
    MemvaultError,
)
from memvault.graph.models import RecallMode
from memvault.learning.models import Seniority
from memvault.memory._extensions import Extensions
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    ChatMessage,
    MemoryCategory,
    MemoryEntry,
    MemoryHistory,
    MemoryLevel,
    MemoryQuery,
    MemoryScope,
    MemoryStoreRequest,
    MetadataFilter,
    StoreStats,
)
from memvault.protocols import Embedder, LLMProvider, MemoryStore, SharedMemoryStore
from memvault.retrieval.filters import MemoryFilterStrategy, check_non_inferable_tag
from memvault.retrieval.packing import CONTEXT_MIN_RELEVANCE, MemoryContext
from memvault.retrieval.presets import RetrievalConfig, get_preset
from memvault.validation import check_agent, check_id, model_error, scope_agent
from memvault.write.admission import AdmissionController
from memvault.write.chunking import CHUNK_CHARS, CHUNK_OVERLAP, chunk_text
from memvault.write.dedup import DedupConfig
from memvault.write.executor import WriteOutcome, execute_writes
from memvault.write.pipeline import WriteDecision, WriteKind
from memvault.write.retention import (
    AgentRetention,
    RetentionPolicy,
    RetentionReport,
    expired_ids,
    select_evictions,
)

if TYPE_CHECKING:
    from memvault.agent.capture import TurnRecord
    from memvault.agent.memory_tools import MemoryTools, MemoryToolsConfig
    from memvault.agent.working import WorkingMemory
    from memvault.consolidation import ConsolidationConfig, ConsolidationResult
    from memvault.conversation.memory import ConversationMemory
    from memvault.graph.memory import GraphMemory
    from memvault.injection.context import ContextInjectionConfig, ContextInjectionStrategy
    from memvault.injection.self_editing import SelfEditingMemoryStrategy
    from memvault.injection.tool_based import ToolBasedInjectionStrategy
    from memvault.learning.engine import LearningEngine
    from memvault.learning.forgetting import ForgettingReport
    from memvault.learning.models import (
        AgentProfile,
        ApprovalItem,
        EvolverReport,
        LearnReport,
        OrgFactKind,
        PruneReport,
        TaskOutcome,
    )
    from memvault.learning.store import LearningStore
    from memvault.llm.cache import CachingLLM
    from memvault.persistence import PersistenceBackend
    from memvault.retrieval.tiered import RecallTier, TieredRecall

__all__ = ["LEVEL_NONE_REASON", "AsyncMemory", "WriteResult", "register_remote"]

LEVEL_NONE_REASON = "memory level 'none' stores nothing: the write was dropped"
"""The reason of every write outcome under ``level: none``."""

logger = logging.getLogger("memvault.memory")


def _caps_text(policy: RetentionPolicy) -> str:
    """The caps of a retention policy, for a log line."""
    caps = [f"{n:,} {c.value}" for c, n in policy.max_per_category.items()]
    if policy.max_memories_per_agent is not None:
        caps.insert(0, f"{policy.max_memories_per_agent:,} per agent")
    return ", ".join(caps)


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class WriteResult(WriteOutcome):
    """What one write did (:class:`~memvault.write.executor.WriteOutcome`), plus advisories.

    ``warnings`` are notes for the writer that never block a write, e.g. the non-inferable
    tag reminder (design document 003, "non-inferable filter").
    """

    warnings: tuple[str, ...] = ()


_MAX_WORKING_PADS = 1_000  # scratchpads one memory object keeps (see working_memory)

_EVOLVER_RUN = "\x00evolver"  # the scheduler's key for the evolver (never an agent id)

# The class that speaks to a server URL. memvault.remote registers it when imported; the first
# server URL loads that module by name (as an entry point would), so this module never imports
# the layer above it and ``import memvault`` does not pay for the client.
_REMOTE: list[type[AsyncMemory]] = []
_REMOTE_MODULE = "memvault.remote"


def register_remote(cls: type[AsyncMemory]) -> None:
    """Make ``AsyncMemory(server_url)`` return a ``cls`` (the remote client registers itself)."""
    _REMOTE[:] = [cls]


def _remote_class() -> type[AsyncMemory]:
    """The registered remote client, loading :mod:`memvault.remote` on first need."""
    if not _REMOTE:
        importlib.import_module(_REMOTE_MODULE)  # registers RemoteAsyncMemory
    if not _REMOTE:
        msg = f"the remote client is not loaded (import {_REMOTE_MODULE})"
        raise MemoryConfigError(msg)
    return _REMOTE[0]


_AUDIT_PAGE = 1_000
_PAGE = 500  # memories per read of get_all/delete_all


def _version_ids(records: Sequence[AuditRecord], start: set[str]) -> set[str]:
    """``start`` and every id linked to it by the audit's supersede records (both ways)."""
    links: dict[str, set[str]] = {}
    for r in records:
        newer = r.details.get("superseded_by")
        if r.action == "memory.supersede" and r.memory_id and newer:
            links.setdefault(r.memory_id, set()).add(str(newer))
            links.setdefault(str(newer), set()).add(r.memory_id)
    ids = set(start)
    todo = list(start)
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in ids:
                ids.add(other)
                todo.append(other)
    return ids


async def _agent_audit(backend: Any, agent: str) -> list[AuditRecord]:
    """Every audit record of ``agent``, oldest first.

    Stores with an audit index on (agent, time) answer ``audit_for_agent`` page by page; the
    others' log is read through ``export_rows`` and filtered (audit and history queries are rare).
    """
    page = getattr(backend, "audit_for_agent", None)
    if page is not None:
        try:
            found: list[AuditRecord] = []
            after: tuple[datetime, str] | None = None
            while True:
                batch: list[AuditRecord] = await page(agent, after=after, limit=_AUDIT_PAGE)
                found.extend(batch)
                if len(batch) < _AUDIT_PAGE:
                    return found
                after = (batch[-1].at, batch[-1].id)
        except MemoryCapabilityError:
            pass  # no audit index (or no audit log): scan below
    found = []
    async for row in backend.export_rows("audit"):
        rec = AuditRecord.model_validate(row)
        if rec.agent_id == agent:
            found.append(rec)
    return found


async def _stored_vectors(
    backend: MemoryStore, entries: Sequence[MemoryEntry], config: ConsolidationConfig
) -> dict[str, Any] | None:
    """The stored embeddings of the entries old enough to consolidate (None: none to be had).

    Consolidation groups similar memories with them; a store that cannot hand them over
    falls back to grouping neighbours in time, which loses nothing.
    """
    export = getattr(backend, "export_vectors", None)
    if export is None:
        return None
    cutoff = utc_now() - timedelta(days=config.min_age_days)
    ids = [e.id for e in entries if e.created_at <= cutoff and e.consolidated_at is None]
    if not ids:
        return None
    try:
        found: dict[str, Any] = await export(ids)
    except MemvaultError as exc:
        logger.info("consolidation groups by time: the store gave no vectors (%s)", exc)
        return None
    return found


class AsyncMemory:
    """Typed, durable memory for agents (async API).

    ``AsyncMemory()`` opens the embedded default store (``~/.memvault/memvault.db``, the bundled
    embedding model). Pass a URL (a path, ``sqlite:///x.db``, ``memory://``) or a config to use
    another store. The store opens on first use; ``close()`` (or ``async with``) releases it.

    A server URL (``AsyncMemory("http://host:8765", api_key=...)``) gives a
    :class:`memvault.remote.RemoteAsyncMemory` instead: the same methods, spoken over the REST
    API of ``memvault serve``.
    """

    def __new__(cls, url: str | None = None, *args: Any, **kwargs: Any) -> AsyncMemory:
        # A given backend without a URL is embedded; a server URL is remote whatever else is
        # passed (RemoteAsyncMemory then refuses the backend with a clear error).
        named = url is not None or kwargs.get("backend") is None
        if cls is AsyncMemory and named and server_url(url, kwargs.get("config")):
            return object.__new__(_remote_class())
        return object.__new__(cls)

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        config: MemvaultConfig | None = None,
        embedder: Embedder | None = None,
        backend: MemoryStore | None = None,
        preset: str | RetrievalConfig | None = None,
        track_access: bool = True,
        llm: LLMProvider | None = None,
        learning_store: LearningStore | None = None,
        operations: PersistenceBackend | None = None,
    ) -> None:
        """Open (lazily) the store at ``url``.

        ``api_key`` is for server URLs (``http://``/``https://``, see
        :class:`memvault.remote.RemoteAsyncMemory`; it defaults to ``$MEMVAULT_API_KEY``
        there); an embedded store ignores it. ``llm`` extracts facts from conversations
        (``add(messages, infer=True)``), is the default LLM of :meth:`consolidate` and proposes
        lessons in :meth:`learn_from`. ``learning_store`` keeps the learning layer's records
        (approvals, agent profiles, trajectories); by default they live beside the memories
        (in memory for a given ``backend``). ``operations`` holds the operational records
        (:attr:`operations`); by default they live where the ``persistence:`` configuration
        says, else beside the memories.

        Raises:
            MemoryConfigError: an empty URL, a preset that does not exist, a bad store.
        """
        from memvault.consolidation import ConsolidationScheduler
        from memvault.llm.cache import CachingLLM

        if isinstance(url, str) and not url.strip():
            msg = "the store URL is empty (leave it out for the default ~/.memvault store)"
            raise MemoryConfigError(msg)
        self._llm = llm
        # Seed 004's response cache: memvault's own LLM calls (consolidation, extraction,
        # proposals) go through it when [response_cache] is enabled (set below, once the
        # config is known).
        self._response_cache: CachingLLM | None = None
        # Learning, the entity graph and conversations, each opened on first use by its own
        # package and closed with this memory (memvault.memory._extensions).
        self._extensions = Extensions()
        self._learning_store = learning_store
        self._learning_url: str | None = None
        self._ops_backend = operations
        if backend is not None:
            self._backend: MemoryStore = backend
            self._config = config or MemvaultConfig()
        else:
            self._config = config if config is not None else load_config(url=url)
            # A given URL wins unless the configuration sets level session/none explicitly.
            target = self._config.resolved_url(url)
            from memvault.backends.factory import open_memory_store

            # WORKING memories stay in process unless the configuration routes them (see
            # memvault.backends.working); level none stores nothing (see _write_planned).
            self._backend = open_memory_store(target, embedder=embedder, config=self._config)
            self._learning_url = target
        name = preset if preset is not None else self._config.retrieval.preset
        try:
            self._preset = get_preset(name) if isinstance(name, str) else name
        except KeyError as exc:
            raise MemoryConfigError(str(exc.args[0])) from None
        self._track_access = track_access
        # Every call of memvault's own LLM is metered (a cost record per call, the per-agent
        # budget gate); the response cache sits outside the meter, so a cache hit costs nothing.
        from memvault.llm.metered import MeteredLLM
        from memvault.memory._costs import CostMeter

        self._meter = CostMeter(lambda: self.operations, self._config.persistence.costs)
        if llm is not None:
            llm = self._llm = MeteredLLM(llm, self._meter)
        if self._config.response_cache.enabled and llm is not None:
            self._response_cache = CachingLLM.from_config(llm, self._config.response_cache)
            self._llm = self._response_cache
        self._dedup = DedupConfig()
        self._scheduler = ConsolidationScheduler(self._config.options.consolidation_interval)
        opts = self._config.options
        self._retention = RetentionPolicy(
            default_days=opts.retention_days,
            categories=dict(opts.retention_by_category),
            agents={
                agent: AgentRetention(
                    default_days=rule.retention_days, categories=dict(rule.by_category)
                )
                for agent, rule in opts.agent_retention.items()
            },
            max_memories_per_agent=opts.max_memories_per_agent,
            max_per_category=dict(opts.max_per_category),
        )
        self._admission: AdmissionController | None = None
        # Scratchpads by (agent, task), least recently used first (see working_memory).
        self._working_pads: dict[tuple[str, str], WorkingMemory] = {}
        self._connect_lock: asyncio.Lock | None = None
        self._closed = False
        # Access counts of searches, written behind in batches (see _note_access).
        self._access_pending: dict[str, Counter[str]] = {}
        self._access_task: asyncio.Task[None] | None = None
        self._access_noted = 0  # searches whose hits were counted ...
        self._access_written = 0  # ... and how many of those are written (or given up)
        self._access_waiters: builtins.list[tuple[int, asyncio.Future[None]]] = []
        # Graph memory (issue 18): co-access strengthening runs behind searches, awaited on
        # close.
        self._graph_tasks: set[asyncio.Task[None]] = set()

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def backend(self) -> MemoryStore:
        """The backend this memory uses."""
        return self._backend

    @property
    def location(self) -> str:
        """Where the data lives."""
        return self._backend.location

    @property
    def config(self) -> MemvaultConfig:
        """The configuration this memory runs with."""
        return self._config

    @property
    def llm(self) -> LLMProvider | None:
        """The LLM this memory was built with (None: no LLM); behind the response cache when
        ``[response_cache] enabled``."""
        return self._llm

    @property
    def response_cache(self) -> CachingLLM | None:
        """The response cache in front of :attr:`llm` (None unless ``[response_cache]
        enabled`` and an LLM was given): its ``stats()`` give the hit rate."""
        cache: CachingLLM | None = getattr(self, "_response_cache", None)
        return cache

    @property
    def conversations(self) -> ConversationMemory:
        """Seed 004's conversation store, compaction and embedding queue for this memory.

        The messages live beside the memories (same SQLite file or PostgreSQL schema; in
        process for ``memory://`` or a given backend), opened on first use and closed with the
        memory. See :class:`memvault.conversation.memory.ConversationMemory`.

        Raises:
            MemoryConfigError: the store cannot hold conversations (composite, mem0, qdrant).
        """
        from memvault.conversation.memory import open_conversation_memory

        backend = self.backend  # a remote memory has none: MemoryCapabilityError
        return self._extensions.get(
            "conversations",
            lambda: open_conversation_memory(
                self._learning_url,
                self.config.conversation,
                embedder=backend.embedder,
                llm=self.llm,
            ),
        )

    @property
    def operations(self) -> PersistenceBackend:
        """Seed 001's operational records for this memory's company: tasks, cost records,
        messages, audit entries, runtime state (:mod:`memvault.persistence`).

        Where the ``persistence:`` section says, else beside the memories (the same SQLite
        file or PostgreSQL schema; in process for ``memory://`` or a given backend). Opened on
        first use and closed with the memory.
        """
        given = self._ops_backend
        if given is not None:
            return given
        from memvault.persistence import create_persistence, persistence_url

        p = self._config.persistence
        if self._learning_url is None and not p.configured:
            url = "memory://"  # a given backend: in process, like its learning records
        else:
            url = persistence_url(self._config, memory_url=self._learning_url)
        return self._extensions.get("operations", lambda: create_persistence(self._config, url=url))

    async def _ready(self, *, settle: bool = True) -> MemoryStore:
        if self._closed:
            msg = "this memory is closed"
            raise MemoryConnectionError(msg)
        if settle:
            await self._settle_access()
        if not self._backend.is_connected:
            if self._connect_lock is None:
                self._connect_lock = asyncio.Lock()
            async with self._connect_lock:
                if not self._backend.is_connected:
                    await self._backend.connect()
        return self._backend

    def _note_access(self, backend: MemoryStore, agent: str, ids: builtins.list[str]) -> None:
        """Count a search's hits as accesses, written behind the search.

        Every search used to commit its own small write: under concurrent load (and across
        server worker processes sharing one SQLite file) those commits queued behind each other
        and behind the write lock. Hits are counted in memory instead and one task writes them:
        everything searched while a write runs goes out in the next one. Reads that return
        entries (and close) wait for pending counts first, so callers still read their own
        accesses; a failed write is logged, never raised into a search.
        """
        counts = self._access_pending.setdefault(agent, Counter())
        counts.update(ids)
        self._access_noted += 1
        if self._access_task is None or self._access_task.done():
            self._access_task = asyncio.get_running_loop().create_task(self._flush_access(backend))

    async def _flush_access(self, backend: MemoryStore) -> None:
        try:
            # No await between the last emptiness check and the end of the task: a search
            # that finds this task still running can rely on it to write its counts.
            while self._access_pending:
                upto = self._access_noted
                pending, self._access_pending = self._access_pending, {}
                when = utc_now()
                for agent, counts in pending.items():
                    # One write per distinct hit count: ids hit n times in this batch get +n.
                    by_times: dict[int, builtins.list[str]] = {}
                    for entry_id, n in counts.items():
                        by_times.setdefault(n, []).append(entry_id)
                    for n, ids in sorted(by_times.items()):
                        try:
                            await backend.record_access(agent, ids, when, times=n)
                        except MemoryError as exc:
                            logger.warning(
                                "memory.access.failed",
                                extra={"agent_id": agent, "error": str(exc)},
                            )
                            break
                self._access_written = upto
                self._release_settlers()
        finally:
            self._release_settlers(everyone=True)

    def _release_settlers(self, *, everyone: bool = False) -> None:
        waiting = []
        for target, future in self._access_waiters:
            if everyone or self._access_written >= target:
                if not future.done():
                    future.set_result(None)
            else:
                waiting.append((target, future))
        self._access_waiters = waiting

    async def _settle_access(self) -> None:
        """Wait until the access counts of searches made before this call are written.

        Only those: counts noted later (searches still streaming in) do not hold it up.
        """
        target = self._access_noted
        task = self._access_task
        if self._access_written >= target or task is None or task.done():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._access_waiters.append((target, future))
        await future

    # -- writes ---------------------------------------------------------------------------------

    @overload
    async def add(
        self,
        content: str,
        *,
        agent_id: str | None = None,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
        infer: bool = False,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> str: ...

    @overload
    async def add(
        self,
        content: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
        infer: bool = False,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[str]: ...

    async def add(
        self,
        content: str | Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
        infer: bool = False,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> str | builtins.list[str]:
        """Store one memory for ``agent_id`` and return its id (or a conversation: see below).

        With dedup on (``options.dedup``, default; ``dedup=`` overrides it per call), a near
        duplicate of a live memory of the same agent and category stores nothing and returns the
        existing memory's id (its access count is bumped), and a statement that gives a subject
        a new value ("now prefers light mode") supersedes the old one, which stays for
        ``as_of`` queries. ``admission=True`` runs admission control; a rejected text returns
        ``""`` (use :meth:`write` to see why).

        ``user_id``, ``session_id``, ``run_id`` and ``namespace`` scope the memory beyond its
        agent (stored as metadata keys of those names; ``search``/``list`` filter on them).
        Content longer than the store's ``max_content_chars`` is stored as linked chunks.

        ``content`` may also be a conversation: a list of chat messages (OpenAI-style dicts
        ``{"role": "user", "content": "..."}`` or :class:`~memvault.models.ChatMessage`); see
        :meth:`add_messages`, which this then is (it returns the list of stored ids).

        Raises:
            MemoryValidationError: blank/oversized/NUL content, unknown category, naive datetime.
            MemoryNotFoundError: ``supersedes`` names no memory of this agent.
        """
        if not isinstance(content, str):
            return await self.add_messages(
                content,
                agent_id=agent_id,
                infer=infer,
                tags=tags,
                metadata=metadata,
                created_at=created_at,
                dedup=dedup,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            )
        if infer:
            msg = "infer=True extracts facts from a conversation: pass a list of messages"
            raise MemoryValidationError(msg)
        outcome = await self.write(
            content,
            agent_id=agent_id,
            category=category,
            tags=tags,
            metadata=metadata,
            created_at=created_at,
            expires_at=expires_at,
            supersedes=supersedes,
            label=label,
            source=source,
            importance=importance,
            dedup=dedup,
            admission=admission,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
        )
        return outcome.id or ""

    async def add_messages(
        self,
        messages: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        infer: bool = False,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        dedup: bool | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[str]:
        """Remember a conversation; returns the ids stored, in order.

        By default each user and assistant turn becomes an episodic memory (system and tool
        messages are skipped), its role in ``metadata["role"]``, in one batch through the write
        path (deduplicated). ``session_id`` makes the turns one thread, so a search that finds
        one turn also weighs its neighbours. A message's own ``created_at`` (or
        ``timestamp``) dates its turn.

        ``infer=True`` stores durable facts instead of turns: extracted by the memory's
        ``llm`` when it has one, else the key-fact sentences (numbers, dates, names) kept
        verbatim. The facts go through dedup and supersession like any write, so a changed
        preference replaces the old one.

        Raises:
            MemoryValidationError: not a list of messages, or none with text to remember.
            MemoryStoreError: the LLM failed to extract facts (nothing was stored).
        """
        agent = scope_agent(agent_id, user_id, run_id)
        turns = conversation_turns(messages)
        extra = scope_metadata(
            metadata, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        requests = [
            _request(
                text,
                category=MemoryCategory.EPISODIC,
                tags=tags,
                metadata={**(extra or {}), "role": role, **({"name": name} if name else {})},
                created_at=when or created_at,
            )
            for role, text, when, name in turns
        ]
        if infer:
            requests = await self._infer_facts(agent, requests, extra or {}, tags)
            if not requests:
                return []
        outcomes = await self._write(agent, requests, dedup=dedup, admission=False)
        return [o.id or "" for o in outcomes]

    async def _infer_facts(
        self,
        agent: str,
        turns: Sequence[MemoryStoreRequest],
        extra: Mapping[str, Any],
        tags: Sequence[str],
    ) -> builtins.list[MemoryStoreRequest]:
        """The fact requests extracted from ``turns`` (which are not stored themselves).

        With the agent's model budget spent, the offline extractor runs instead of the LLM.
        """
        from memvault.consolidation.extraction import EpisodicExtractor
        from memvault.llm.metered import CostScope, cost_scope

        now = utc_now()
        llm = self._llm
        if llm is not None and not await self._meter.allow(CostScope(agent_id=agent)):
            llm = None
        episodes = [
            MemoryEntry(
                id=new_id(),
                agent_id=agent,
                category=MemoryCategory.EPISODIC,
                # The model is told who said what; the no-LLM path keeps sentences verbatim.
                content=(
                    f"{t.metadata.extra.get('role', 'user')}: {t.content}"
                    if llm is not None
                    else t.content
                ),
                metadata=t.metadata,
                created_at=t.created_at or now,
                updated_at=now,
            )
            for t in turns
        ]
        with cost_scope(agent, operation="extraction"):
            outcome = await EpisodicExtractor(llm).extract(episodes, now=now)
        if outcome.error:
            msg = f"fact extraction failed, nothing was stored: {outcome.error}"
            raise MemoryStoreError(msg)
        facts: builtins.list[MemoryStoreRequest] = []
        for request in outcome.requests:
            # The turns were not stored, so the facts point at them by nothing but their scope.
            kept = {k: v for k, v in request.metadata.extra.items() if k != "episode_ids"}
            meta = request.metadata.model_copy(
                update={
                    "extra": {**extra, **kept},
                    "tags": tuple(dict.fromkeys((*request.metadata.tags, *tags))),
                }
            )
            facts.append(request.model_copy(update={"metadata": meta}))
        return facts

    async def write(
        self,
        content: str,
        *,
        agent_id: str | None = None,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        supersedes: str | None = None,
        label: str | None = None,
        source: str | None = None,
        importance: float | None = None,
        dedup: bool | None = None,
        admission: bool = False,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> WriteResult:
        """Like :meth:`add`, but report what the write did (stored, confirmed, superseded...).

        ``admission=True`` runs admission control: a low-value text is rejected (``id`` None,
        ``decision.reason`` says why), never raised as an error. The result's ``warnings``
        carry advisories that never block a write: a stored memory without the
        ``non-inferable`` tag gets the design documents' reminder about it.
        """
        agent = scope_agent(agent_id, user_id, run_id)
        request = _request(
            content,
            category=category,
            tags=tags,
            metadata=scope_metadata(
                metadata,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            ),
            created_at=created_at,
            expires_at=expires_at,
            supersedes=supersedes,
            label=label,
            source=source,
            importance=importance,
        )
        return (await self._write(agent, [request], dedup=dedup, admission=admission))[0]

    async def _write(
        self,
        agent: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        dedup: bool | None,
        admission: bool,
    ) -> list[WriteResult]:
        """Store ``requests`` through the write planner (or straight, with dedup off).

        A request longer than the store's ``max_content_chars`` is stored as linked chunks
        (:mod:`memvault.write.chunking`); its outcome is the first chunk's.
        """
        off = self._config.options.disabled_categories
        for request in requests if off else ():
            if request.category in off:
                name = request.category.value
                msg = (
                    f"{name} memories are switched off in this store's configuration "
                    f"({name}.enabled: false, i.e. options.disabled_categories)"
                )
                raise MemoryValidationError(msg)
        originals = requests
        requests, heads = self._chunked(requests)
        outcomes = await self._write_planned(agent, requests, dedup=dedup, admission=admission)
        return self._advised(agent, originals, [outcomes[i] for i in heads])

    def _advised(
        self,
        agent: str,
        requests: Sequence[MemoryStoreRequest],
        outcomes: Sequence[WriteOutcome],
    ) -> list[WriteResult]:
        """The outcomes with the non-inferable advisory of each stored request (never a block).

        Design document 003 (non-inferable filter, D23): a store warns when a memory lacks the
        ``non-inferable`` tag, which an injection filter keys on, but goes ahead. The advice is
        logged (INFO ``memory.non_inferable.advisory``, once per batch: a warning level would
        print on every plain ``memvault add``) and carried in each result's ``warnings``.
        WORKING memories are transient context, not candidates for the filter, so they get none.
        """
        results: list[WriteResult] = []
        advised = 0
        for request, outcome in zip(requests, outcomes, strict=True):
            note = None
            if outcome.stored and request.category is not MemoryCategory.WORKING:
                note = check_non_inferable_tag(request)
            advised += note is not None
            results.append(
                WriteResult(outcome.id, outcome.decision, warnings=() if note is None else (note,))
            )
        if advised:
            logger.info(
                "memory.non_inferable.advisory",
                extra={"agent_id": agent, "untagged": advised, "stored": len(results)},
            )
        return results

    def _chunked(
        self, requests: Sequence[MemoryStoreRequest]
    ) -> tuple[list[MemoryStoreRequest], list[int]]:
        """``requests`` with each over-long one split into chunks; where each input starts."""
        limit = self._config.options.max_content_chars
        out: list[MemoryStoreRequest] = []
        heads: list[int] = []
        for request in requests:
            heads.append(len(out))
            if len(request.content) <= limit:
                out.append(request)
                continue
            size = min(CHUNK_CHARS, limit)
            pieces = chunk_text(request.content, size=size, overlap=min(CHUNK_OVERLAP, size // 4))
            group = new_id()
            for index, piece in enumerate(pieces):
                extra = {
                    **request.metadata.extra,
                    "chunk_group": group,
                    "chunk_index": index,
                    "chunk_count": len(pieces),
                }
                meta = request.metadata.model_copy(update={"extra": extra})
                update: dict[str, Any] = {"content": piece, "metadata": meta}
                if index:
                    update["supersedes"] = None  # the first chunk replaces the old memory
                out.append(request.model_copy(update=update))
        return out, heads

    async def _write_planned(
        self,
        agent: str,
        requests: Sequence[MemoryStoreRequest],
        *,
        dedup: bool | None,
        admission: bool,
    ) -> list[WriteOutcome]:
        if self._config.level is MemoryLevel.NONE:
            return self._dropped(agent, requests)
        backend = await self._ready()
        if self._config.importance.enabled:
            from memvault.graph import wiring as _graph_wiring

            requests = await _graph_wiring.score_importance(
                backend, agent, requests, self._config.importance
            )
        use_dedup = self._config.options.dedup if dedup is None else dedup
        if not use_dedup and not admission:
            ids = await backend.store_many(agent, requests)
            plain = WriteDecision(kind=WriteKind.ADD, reason="dedup off")
            outcomes = [WriteOutcome(i, plain) for i in ids]
        else:
            config = self._dedup if use_dedup else self._dedup.model_copy(update={"enabled": False})
            if admission and self._admission is None:
                self._admission = AdmissionController()
            # With an LLM, the changes of fact the rules cannot settle are asked (issue 41.4).
            arbiter = None
            if use_dedup and self._llm is not None and self._config.options.llm_supersession:
                from memvault.write.arbiter import SupersessionArbiter

                arbiter = SupersessionArbiter(self._llm)
                config = config.model_copy(update={"mark_contested": True})
            outcomes = await execute_writes(
                backend,
                agent,
                requests,
                dedup=config,
                admission=self._admission if admission else None,
                now=utc_now(),
                arbiter=arbiter,
            )
        if any(o.stored for o in outcomes):
            if self._config.graph.enabled:
                from memvault.graph import wiring as _graph_wiring

                stored = [o.id if o.stored else None for o in outcomes]
                await _graph_wiring.index_stored(self.graph, agent, requests, stored)
            await self._enforce_caps(backend, agent)
        return outcomes

    def _dropped(self, agent: str, requests: Sequence[MemoryStoreRequest]) -> list[WriteOutcome]:
        """Level ``none``: every write is accepted and dropped, and says so.

        The design documents call ``none`` "no persistence": an agent configured with it keeps
        running its usual memory calls, so writes are not errors; but nothing pretends to be
        stored either. Each outcome is a REJECT with no id (``add`` returns ``""``, as for a
        write admission control rejects), its reason naming the level.
        """
        decision = WriteDecision(kind=WriteKind.REJECT, reason=LEVEL_NONE_REASON)
        logger.info("memory.level_none.dropped", extra={"agent_id": agent, "count": len(requests)})
        return [WriteOutcome(None, decision) for _ in requests]

    async def add_many(
        self,
        items: Sequence[MemoryStoreRequest | Mapping[str, Any]],
        *,
        agent_id: str,
        dedup: bool | None = None,
    ) -> list[str]:
        """Store many memories: one embedding batch, one transaction, ids in input order.

        Every item is validated before anything is written; a failure stores nothing. With
        dedup on, an item that repeats a stored memory (or an earlier item) returns that
        memory's id instead of storing a copy.
        """
        agent = check_agent(agent_id)
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            msg = "items must be a list of dicts or MemoryStoreRequest objects"
            raise MemoryValidationError(msg)
        if items and all(is_message(item) for item in items):
            # A conversation (every item has a role): one episodic memory per turn.
            return await self.add_messages(items, agent_id=agent, dedup=dedup)  # type: ignore[arg-type]
        requests = [_item_request(item, i) for i, item in enumerate(items)]
        outcomes = await self._write(agent, requests, dedup=dedup, admission=False)
        return [o.id or "" for o in outcomes]

    async def delete(self, memory_id: str, *, agent_id: str | None = None) -> bool:
        """Delete one memory (audited); False if the agent has no memory with that id."""
        agent = scope_agent(agent_id)
        mid = check_id(memory_id)
        backend = await self._ready()
        deleted = await backend.delete(agent, mid)
        if deleted:
            # A store that audits deletions writes the record in the deletion's own
            # transaction; passing ours too would only be recognised and dropped there.
            if not getattr(backend, "audits_deletions", False):
                await self._audit(backend, "memory.delete", agent, mid)
            if self._response_cache is not None:
                self._response_cache.invalidate_memories([mid])
        return deleted

    async def clear(self, *, agent_id: str, category: CategoryLike | None = None) -> int:
        """Delete all memories of the agent (or of one category); returns how many (audited)."""
        agent = check_agent(agent_id)
        cat = None if category is None else parse_category(category)
        backend = await self._ready()
        count = await backend.clear(agent, category=cat)
        # As in delete: a store that audits deletions already wrote the record.
        if count and not getattr(backend, "audits_deletions", False):
            details = {"count": count, "category": None if cat is None else cat.value}
            await self._audit(backend, "memory.clear", agent, None, details)
        return count

    async def _audit(
        self,
        backend: MemoryStore,
        action: str,
        agent: str,
        memory_id: str | None,
        details: dict[str, Any] | None = None,
    ) -> None:
        record = getattr(backend, "record_audit", None)
        if record is None:
            return
        await record(
            [
                AuditRecord(
                    id=new_id(),
                    at=utc_now(),
                    actor=audit_actor(agent),
                    action=action,
                    agent_id=agent,
                    memory_id=memory_id,
                    details=audit_details(details),
                )
            ]
        )

    # -- retention and archive ------------------------------------------------------------------

    @property
    def retention(self) -> RetentionPolicy:
        """The retention rules and caps this memory enforces (from ``options``)."""
        return self._retention

    def _archive_api(self, backend: MemoryStore) -> Any:
        if not hasattr(backend, "archive"):
            msg = f"the {type(backend).__name__} store has no archive"
            raise MemoryCapabilityError(msg)
        return backend

    async def sweep(self, *, agent_id: str | None = None) -> RetentionReport:
        """Enforce retention now: archive expired entries, then evict over the caps.

        Runs for one agent or every agent. Nothing is deleted outright: expired and evicted
        entries go to the archive (``archived()``, ``restore()``).
        """
        backend = await self._ready()
        store = self._archive_api(backend)
        agents = [check_agent(agent_id)] if agent_id is not None else await backend.agent_ids()
        report = RetentionReport()
        now = utc_now()
        for agent in agents:
            entries = [
                e async for e in backend.export_entries(agent) if e.scope is MemoryScope.PRIVATE
            ]
            expired = expired_ids(entries, self._retention, now)
            if expired:
                report.expired.update(await store.archive(agent, expired, reason="expire"))
            gone = set(expired)
            live = [e for e in entries if e.id not in gone]
            evict = select_evictions(live, self._retention, now)
            if evict:
                report.evicted.update(await store.archive(agent, evict, reason="evict"))
        return report

    async def _enforce_caps(self, backend: MemoryStore, agent: str) -> None:
        """After a write: evict the weakest entries if the agent is over a cap."""
        policy = self._retention
        if not policy.has_caps or not hasattr(backend, "archive"):
            return
        over = policy.max_memories_per_agent is not None and (
            await backend.count(agent) > policy.max_memories_per_agent
        )
        for category, cap in policy.max_per_category.items():
            if over:
                break
            over = await backend.count(agent, category=category) > cap
        if over:
            entries = [
                e async for e in backend.export_entries(agent) if e.scope is MemoryScope.PRIVATE
            ]
            evict = select_evictions(entries, policy, utc_now())
            if evict:
                await self._archive_api(backend).archive(agent, evict, reason="evict")
                # Said out loud: a bulk load past the cap keeps only part of what was added,
                # which a user who did not know of the cap would otherwise find out much later.
                logger.warning(
                    "agent %s went over its memory cap (%s): archived %d of its weakest "
                    "memories (reason 'evict'; `memvault archive restore` brings them back). "
                    "Raise or lift the cap with options.max_memories_per_agent / "
                    "max_per_category (None: no cap).",
                    agent,
                    _caps_text(policy),
                    len(evict),
                )

    async def consolidate(
        self,
        *,
        agent_id: str,
        strategy: ConsolidationStrategy | str | None = None,
        llm: LLMProvider | None = None,
        dry_run: bool = False,
        config: ConsolidationConfig | None = None,
        min_age_days: float | None = None,
    ) -> ConsolidationResult:
        """Merge the agent's older memories into fewer ones; the originals go to the archive.

        ``strategy`` and ``config`` default to the configuration's ``consolidation`` section
        (strategy ``simple`` unless it says otherwise). Only memories created at least
        ``min_age_days`` ago are merged (default: ``consolidation.min_age_days``, 30 days;
        0 merges any age); at most ``max_group_size`` (5) originals go into one new memory.
        Every merged original stays readable by its id: ``get()`` answers its archived copy
        with ``consolidated_into`` naming the new memory.
        ``strategy``: ``simple`` (concatenation), ``dual_mode`` (density routing: extractive
        for dense groups, LLM summary for sparse ones), ``llm`` (LLM synthesis) or ``extract``
        (episodes -> semantic facts; episodes are marked consolidated, not archived). ``llm``
        and ``dual_mode`` need an LLM (``llm`` here or the one the memory was built with); the
        ``llm`` groups are synthesised in parallel (bounded) and, unless the config turns it
        off, with the agent's recent ``distillation`` entries as context. The new entry is
        stored before the originals are archived, so nothing is lost if a step fails.
        ``dry_run`` writes nothing.

        Raises:
            MemoryValidationError: unknown strategy.
            MemoryConfigError: ``llm`` or ``dual_mode`` with no LLM available.
        """
        from memvault.consolidation import ConsolidationConfig, ConsolidationStrategy
        from memvault.consolidation import consolidate as run_consolidation

        agent = check_agent(agent_id)
        if strategy is None:
            strategy = self._config.consolidation.strategy
        if config is None:
            config = self._config.consolidation.consolidation_config()
        if min_age_days is not None:
            config = ConsolidationConfig.model_validate(
                {**config.model_dump(), "min_age_days": min_age_days}
            )
        try:
            kind = ConsolidationStrategy(strategy)
        except ValueError:
            names = ", ".join(s.value for s in ConsolidationStrategy)
            msg = f"unknown consolidation strategy {strategy!r} (choose from {names})"
            raise MemoryValidationError(msg) from None
        backend = await self._ready()
        store = self._archive_api(backend)
        entries = [e async for e in backend.export_entries(agent) if e.scope is MemoryScope.PRIVATE]

        async def store_new(requests: builtins.list[MemoryStoreRequest]) -> builtins.list[str]:
            # Consolidated text is new knowledge, written as-is (no dedup against its sources).
            ids: builtins.list[str] = await backend.store_many(agent, requests)
            return ids

        async def archive_and_delete(
            originals: builtins.list[MemoryEntry], new_id: str
        ) -> dict[str, str]:
            index: dict[str, str] = await store.archive(
                agent, [e.id for e in originals], reason="consolidate", consolidated_into=new_id
            )
            return index

        async def mark(ids: builtins.list[str]) -> None:
            await store.mark_consolidated(agent, ids, utc_now())

        vectors = (
            None
            if kind is ConsolidationStrategy.EXTRACT
            else await _stored_vectors(backend, entries, config)
        )
        from memvault.llm._protocol import with_model
        from memvault.llm.metered import cost_scope

        if llm is None and self._llm is not None:
            # The config may name the model of these calls (InitRunner's model_override; the
            # dual-mode summaries' own summarization_model first).
            settings = self._config.consolidation
            summaries = settings.archival.dual_mode.summarization_model
            if kind is ConsolidationStrategy.DUAL_MODE and summaries is not None:
                llm = with_model(self._llm, summaries, key="dual_mode.summarization_model")
            else:
                llm = with_model(
                    self._llm, settings.model_override, key="consolidation.model_override"
                )
        with cost_scope(agent, operation="consolidation"):
            result = await run_consolidation(
                entries,
                agent_id=agent,
                strategy=kind,
                llm=llm if llm is not None else self._llm,
                store=store_new,
                archive_and_delete=archive_and_delete,
                mark_consolidated=mark,
                dry_run=dry_run,
                config=config,
                vectors=vectors,
            )
        if not dry_run:
            self._scheduler.record_run(agent, utc_now())
        return result

    async def consolidate_if_due(
        self,
        *,
        agent_id: str,
        session_ended: bool = False,
        strategy: ConsolidationStrategy | str = ConsolidationStrategy.SIMPLE,
        llm: LLMProvider | None = None,
    ) -> ConsolidationResult | None:
        """Consolidate when ``options.consolidation_interval`` says it is time; else None.

        HOURLY/DAILY/WEEKLY count from this process's last run for the agent; AFTER_SESSION
        runs when ``session_ended``; NEVER and MANUAL never run here.
        """
        agent = check_agent(agent_id)
        if not self._scheduler.is_due(agent, now=utc_now(), session_ended=session_ended):
            return None
        result = await self.consolidate(agent_id=agent, strategy=strategy, llm=llm)
        await self._evolve_if_due()
        return result

    async def _evolve_if_due(self) -> None:
        # The skill evolver rides on the consolidation schedule: one tenant-wide cycle per
        # interval (it logs and reports its own failures and never raises).
        if not self._config.procedural.evolver.enabled:
            return
        now = utc_now()
        if self._scheduler.is_due(_EVOLVER_RUN, now=now):
            self._scheduler.record_run(_EVOLVER_RUN, now)
            await self.learning.evolve()

    async def archived(
        self, *, agent_id: str, limit: int = 100, offset: int = 0
    ) -> builtins.list[ArchivedEntry]:
        """The agent's archived memories, newest first."""
        agent = check_agent(agent_id)
        backend = await self._ready()
        rows: builtins.list[ArchivedEntry] = await self._archive_api(backend).archived(
            agent, limit=limit, offset=offset
        )
        return rows

    async def archive(
        self, ids: Sequence[str], *, agent_id: str, reason: str = "archive"
    ) -> dict[str, str]:
        """Move memories to the archive; returns original id -> archive id (unknown ids omitted)."""
        agent = check_agent(agent_id)
        backend = await self._ready()
        index: dict[str, str] = await self._archive_api(backend).archive(
            agent, list(ids), reason=reason
        )
        return index

    async def restore(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """Bring an archived memory back under its original id.

        Raises:
            MemoryNotFoundError: the agent has no archived memory with that id.
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        backend = await self._ready()
        entry: MemoryEntry = await self._archive_api(backend).restore(agent, mid)
        return entry

    async def audit(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 100
    ) -> builtins.list[AuditRecord]:
        """The newest audit records (of one agent and/or memory), oldest first."""
        agent = None if agent_id is None else check_agent(agent_id)
        backend = await self._ready()
        if not hasattr(backend, "audit_log"):
            msg = f"the {type(backend).__name__} store has no audit log"
            raise MemoryCapabilityError(msg)
        if agent is None:
            records: builtins.list[AuditRecord] = await backend.audit_log(
                memory_id=memory_id, limit=limit
            )
            return records
        found = [
            rec
            for rec in await _agent_audit(backend, agent)
            if memory_id is None or rec.memory_id == memory_id
        ]
        return found[-limit:]

    # -- reads ----------------------------------------------------------------------------------

    def _query(
        self,
        text: str | None,
        *,
        limit: int,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        tags: Sequence[str] | None = None,
        label: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        filters: tuple[MetadataFilter, ...] = (),
    ) -> MemoryQuery:
        if isinstance(tags, str):
            msg = "tags must be a list of strings, not one string"
            raise MemoryValidationError(msg)
        try:
            return MemoryQuery(
                text=text,
                categories=_categories(categories),
                tags=tuple(tags or ()),
                label=label,
                since=_aware(since, "since"),
                until=_aware(until, "until"),
                as_of=_aware(as_of, "as_of"),
                limit=limit,
                include_superseded=include_superseded,
                min_relevance=min_relevance,
                filters=filters,
            )
        except ValidationError as exc:
            raise model_error(exc) from None

    # Read-time retention: an entry older than its category's age rule is expired even before a
    # sweep archives it, so no read returns it. The rule becomes a ``since`` cutoff inside the
    # query the backend runs (before its top-N cut, so a page is never short of live entries);
    # categories with different cutoffs are queried separately and merged.

    def _expired(self, entry: MemoryEntry, now: datetime) -> bool:
        """True if the agent's retention rules have expired ``entry`` (private entries only)."""
        if entry.scope is not MemoryScope.PRIVATE:
            return False
        age = self._retention.max_age(entry.agent_id, entry.category)
        return age is not None and now - entry.created_at > age

    def _retention_parts(
        self, agent: str, q: MemoryQuery, now: datetime
    ) -> builtins.list[MemoryQuery]:
        """``q`` as queries that each carry one retention cutoff (``[q]`` when no rule applies).

        Categories are grouped by their cutoff (``now`` minus the agent's maximum age for the
        category); each group's query asks for those categories created at or after the cutoff
        (and after ``q.since``). A group whose cutoff passes ``q.until`` is left out.
        """
        policy = self._retention
        if not policy.has_rules:
            return [q]
        wanted = q.categories if q.categories is not None else frozenset(MemoryCategory)
        groups: dict[datetime | None, set[MemoryCategory]] = {}
        for category in wanted:
            age = policy.max_age(agent, category)
            groups.setdefault(None if age is None else now - age, set()).add(category)
        if set(groups) == {None}:
            return [q]
        parts: builtins.list[MemoryQuery] = []
        for cutoff, cats in sorted(groups.items(), key=lambda g: (g[0] is not None, g[0] or now)):
            since = cutoff
            if cutoff is None or (q.since is not None and q.since > cutoff):
                since = q.since
            if since is not None and q.until is not None and since > q.until:
                continue
            whole = q.categories is None and len(groups) == 1
            parts.append(
                q.model_copy(
                    update={"since": since, "categories": None if whole else frozenset(cats)}
                )
            )
        return parts

    async def _retained_search(
        self,
        backend: MemoryStore,
        agent: str,
        q: MemoryQuery,
        cfg: RetrievalConfig,
        *,
        include_shared: bool,
        now: datetime,
    ) -> builtins.list[MemoryEntry]:
        """``hybrid_search`` under the agent's retention rules (see :meth:`_retention_parts`).

        One query when one cutoff covers every category; otherwise one search per cutoff (and
        one of the shared knowledge, which retention rules do not cover) merged by relevance,
        best first, at most ``q.limit``. Ranking counts time from ``now``.
        """
        parts = self._retention_parts(agent, q, utc_now())
        if len(parts) == 1 and parts[0] is q:
            return await hybrid_search(
                backend, agent, q, cfg, now=now, include_shared=include_shared
            )
        searches = [hybrid_search(backend, agent, part, cfg, now=now) for part in parts]
        if include_shared:
            searches.append(hybrid_search(backend, None, q, cfg, now=now, include_shared=True))
        found = [e for batch in await asyncio.gather(*searches) for e in batch]
        found.sort(key=lambda e: e.relevance_score or 0.0, reverse=True)
        return found[: q.limit]

    async def _retained_list(
        self, backend: MemoryStore, agent: str, q: MemoryQuery, offset: int
    ) -> builtins.list[MemoryEntry]:
        """``list_entries`` under the agent's retention rules: each cutoff's query gives its
        newest ``offset + limit`` entries, merged newest first (the backends' order)."""
        parts = self._retention_parts(agent, q, utc_now())
        if len(parts) == 1:
            return await backend.list_entries(agent, parts[0], offset=offset)
        need = offset + q.limit
        merged: builtins.list[MemoryEntry] = []
        for part in parts:
            got = 0
            while got < need:
                page = min(need - got, 1000)
                rows = await backend.list_entries(
                    agent, part.model_copy(update={"limit": page}), offset=got
                )
                merged.extend(rows)
                got += len(rows)
                if len(rows) < page:
                    break
        merged.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return merged[offset:need]

    async def search(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        limit: int = 10,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        include_shared: bool = False,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        preset: str | RetrievalConfig | None = None,
        explain: bool = False,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> list[MemoryEntry]:
        """Hybrid search of the agent's memories, best first, ``relevance_score`` set.

        ``filters`` narrow the search by metadata, mem0-style and applied before ranking
        (``{"project": "x", "priority": {"gte": 2}, "status": {"in": ["open", "wip"]}}``; see
        :class:`~memvault.models.MetadataFilter`); ``user_id``, ``session_id``, ``run_id`` and
        ``namespace`` are shorthands for equality filters on those keys.

        With the default preset ``relevance_score`` is the calibrated evidence model's
        probability: absolute, so ``min_relevance`` drops the same weak matches in every query
        (the reference presets ``legacy``, ``hybrid``, ``bm25`` and ``dense`` rescale per query).
        With ``explain=True`` every result's ``score`` holds the breakdown (raw cosine and BM25,
        relevance, recency, boost, final, and each evidence feature's contribution).

        ``include_shared=True`` also searches the store's shared knowledge (:meth:`publish`, any
        author, the agent's own publications included) and ranks it together with the agent's
        memories; shared entries get no personal boost.

        A query that names a period ("two weeks ago", "in the past three months", "in May
        2023") also looks among the memories created in it, and ranking favours them. Relative
        periods count back from ``asked_at`` (default: ``as_of``, else now): set it when
        replaying a conversation recorded earlier, so that "two weeks ago" means two weeks
        before the question. Unlike ``as_of`` it hides nothing.

        Retention age rules (``options.retention_days``, ``retention_by_category``,
        ``agent_retention``) apply at read time: an expired memory is never returned, even
        before a sweep moves it to the archive.
        """
        agent = scope_agent(agent_id, user_id, run_id)
        if not isinstance(query, str) or not query.strip():
            msg = "search query is empty"
            raise MemoryValidationError(msg)
        asked = _aware(asked_at, "asked_at")
        q = self._query(
            query,
            limit=limit,
            categories=categories,
            tags=tags,
            since=since,
            until=until,
            as_of=as_of,
            include_superseded=include_superseded,
            min_relevance=min_relevance,
            filters=query_filters(
                filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            ),
        )
        cfg = self._resolve_preset(preset)
        backend = (
            await self._shared_store(settle=False)
            if include_shared
            else await self._ready(settle=False)
        )
        # The search ranks from when the question is asked, else from the moment it searches the
        # store as of, else from now ("last week" means the week before it, and recency counts
        # back from it). Retention rules apply at read time.
        now = asked or q.as_of or utc_now()
        graph_weight = self._graph_weight(cfg)
        if graph_weight is None:
            results = await self._retained_search(
                backend, agent, q, cfg, include_shared=include_shared, now=now
            )
        else:
            from memvault.graph import wiring as _graph_wiring

            # The plain search (its order is the base) and a wider one (what may move up).
            wide, pinned = _graph_wiring.widen(q, cfg)
            results, extras = await asyncio.gather(
                self._retained_search(
                    backend, agent, q, cfg, include_shared=include_shared, now=now
                ),
                self._retained_search(
                    backend, agent, wide, pinned, include_shared=include_shared, now=now
                ),
            )
            results = await _graph_wiring.graph_rank(
                self.graph,
                agent,
                query,
                results,
                cfg,
                extras=extras,
                weight=graph_weight,
                limit=q.limit,
                as_of=q.as_of,
                now=now,
            )
            self._strengthen_behind(agent, [r.id for r in results[:5]])
        if not explain:
            results = [r.model_copy(update={"score": None}) for r in results]
        # Only the agent's own private memories count accesses: shared rows are append-only.
        private = [r.id for r in results if r.scope is MemoryScope.PRIVATE]
        if self._track_access and private:
            self._note_access(backend, agent, private)
        return results

    # -- graph memory (issue 18) ----------------------------------------------------------------

    @property
    def graph(self) -> GraphMemory:
        """The entity graph beside the memories (``graph.enabled``; opened on first use).

        Raises:
            MemoryConfigError: graph memory is off (``graph.enabled: false``).
        """
        from memvault.graph.memory import open_graph_memory

        return self._extensions.get(
            "graph", lambda: open_graph_memory(self._side_url(), self._config.graph, llm=self._llm)
        )

    def _graph_weight(self, cfg: RetrievalConfig) -> float | None:
        """The graph weight of a search with ``cfg``; None: the search does not use the graph."""
        gcfg = self._config.graph
        if not gcfg.enabled:
            return None
        weight = max(cfg.graph_weight, gcfg.expand_weight if gcfg.expand_search else 0.0)
        if weight <= 0 and cfg.signals is None:
            return None
        return weight

    def _strengthen_behind(self, agent: str, ids: builtins.list[str]) -> None:
        if not self._config.graph.strengthen_on_search or len(ids) < 2:
            return
        from memvault.graph import wiring as _graph_wiring

        task = asyncio.get_running_loop().create_task(
            _graph_wiring.strengthen_quietly(self.graph, agent, ids)
        )
        self._graph_tasks.add(task)
        task.add_done_callback(self._graph_tasks.discard)

    async def graph_recall(
        self,
        query: str,
        *,
        agent_id: str,
        mode: RecallMode | str = RecallMode.SPREADING,
        hops: int | None = None,
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> builtins.list[MemoryEntry]:
        """Memories reached through the graph from the query's entities, most activated first.

        ``mode`` ``bfs`` walks ``hops`` edges breadth-first; ``spreading`` (the default) spreads
        activation along weighted edges. Only edges valid at ``as_of`` (now when None) are
        walked. ``relevance_score`` is the memory's activation in [0, 1].

        Raises:
            MemoryConfigError: graph memory is off.
            MemoryValidationError: an empty query, an unknown mode or a bad limit.
        """
        from memvault.graph.models import RecallMode

        agent = check_agent(agent_id)
        if not isinstance(query, str) or not query.strip():
            msg = "graph recall query is empty"
            raise MemoryValidationError(msg)
        try:
            how = RecallMode(mode)
        except ValueError:
            msg = f"unknown graph recall mode {mode!r} (bfs or spreading)"
            raise MemoryValidationError(msg) from None
        if hops is not None and not 1 <= hops <= 5:
            msg = "hops must be between 1 and 5"
            raise MemoryValidationError(msg)
        if not 1 <= limit <= 1000:
            msg = "limit must be between 1 and 1000"
            raise MemoryValidationError(msg)
        when = _aware(as_of, "as_of")
        recall = await self.graph.recall(agent, query, as_of=when, mode=how, hops=hops)
        found: builtins.list[MemoryEntry] = []
        for memory_id, activation in recall.memories.items():
            if len(found) >= limit:
                break
            try:
                entry = await self._live(memory_id, agent_id=agent)
            except MemoryNotFoundError:
                continue  # deleted or archived since it was indexed
            if entry.superseded_by is not None and when is None:
                continue
            found.append(entry.model_copy(update={"relevance_score": activation}))
        return found

    async def recall_tiered(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        tier: RecallTier | str | None = None,
        as_of: datetime | None = None,
    ) -> TieredRecall:
        """Search as deep as the query needs: shallow, targeted or deep (``tiered_recall``).

        Off (``tiered_recall.enabled: false``, the default): a plain search, reported as the
        targeted tier. On: the heuristic (or, with ``classifier: llm``, the memory's LLM)
        picks the tier unless ``tier`` forces one; ``validate_results`` has the LLM check the
        results and escalates to deep when they fall short. LLM failures fall back (fail-open).

        Raises:
            MemoryValidationError: an empty query or an unknown tier.
        """
        from memvault.retrieval.tiered import (
            LLMRecallValidator,
            LLMTierClassifier,
            RecallTier,
            TieredRecall,
            classify_tier,
        )

        cfg = self._config.tiered_recall
        chosen: RecallTier
        if tier is not None:
            try:
                chosen, by = RecallTier(tier), "caller"
            except ValueError:
                msg = f"unknown recall tier {tier!r} (shallow, targeted or deep)"
                raise MemoryValidationError(msg) from None
        elif not cfg.enabled:
            chosen, by = RecallTier.TARGETED, "off"
        elif cfg.classifier == "llm" and self._llm is not None:
            from memvault.llm.metered import cost_scope

            with cost_scope(agent_id, operation="recall"):
                chosen, by = await LLMTierClassifier(self._llm).classify(query)
        else:
            chosen, by = classify_tier(query), "heuristic"
        presets = {
            RecallTier.SHALLOW: cfg.shallow_preset,
            RecallTier.TARGETED: cfg.targeted_preset,
            RecallTier.DEEP: cfg.deep_preset,
        }
        if by == "off":
            presets[RecallTier.TARGETED] = self._preset.name
        entries = await self.search(
            query,
            agent_id=agent_id,
            limit=limit,
            as_of=as_of,
            preset=self._tier_preset(presets[chosen]),
        )
        escalated = False
        validated: bool | None = None
        if cfg.enabled and cfg.validate_results and self._llm is not None:
            from memvault.llm.metered import cost_scope

            with cost_scope(agent_id, operation="recall"):
                validated = await LLMRecallValidator(self._llm).sufficient(query, entries)
            if not validated and chosen is not RecallTier.DEEP:
                chosen, escalated = RecallTier.DEEP, True
                entries = await self.search(
                    query,
                    agent_id=agent_id,
                    limit=limit,
                    as_of=as_of,
                    preset=self._tier_preset(presets[RecallTier.DEEP]),
                )
        return TieredRecall(
            tier=chosen, classified_by=by, entries=entries, escalated=escalated, validated=validated
        )

    def _tier_preset(self, name: str) -> RetrievalConfig:
        if name == self._preset.name:
            return self._preset
        return self._resolve_preset(name)

    async def forget(self, *, agent_id: str | None = None) -> builtins.list[ForgettingReport]:
        """One optical-forgetting pass (``forgetting``; the maintenance job runs it too).

        Memories not accessed for ``compress_after_days`` are compressed, for
        ``summary_after_days`` reduced to a summary; each original goes to the archive
        (``restore`` brings it back). ``agent_id`` None: every agent. Does nothing while
        ``forgetting.enabled`` is false.
        """
        from memvault.learning.forgetting import optical_forgetting
        from memvault.learning.models import is_pool_id

        cfg = self._config.forgetting
        if not cfg.enabled:
            return []
        backend = await self._ready()
        agents = [check_agent(agent_id)] if agent_id is not None else await backend.agent_ids()
        now = utc_now()
        return [
            await optical_forgetting(self, agent, cfg, now=now, llm=self._llm)
            for agent in agents
            if not is_pool_id(agent)
        ]

    async def promote_skills(self, *, agent_id: str) -> builtins.list[ApprovalItem]:
        """Propose the agent's dense, often used graph regions as skills (approval queue).

        Raises:
            MemoryConfigError: graph memory is off.
        """
        from memvault.learning.promotion import promote_skills

        agent = check_agent(agent_id)
        return await promote_skills(
            self.graph, self, self.learning, agent, self._config.graph.promotion
        )

    def _resolve_preset(self, preset: str | RetrievalConfig | None) -> RetrievalConfig:
        if preset is None:
            return self._preset
        if isinstance(preset, RetrievalConfig):
            return preset
        try:
            return get_preset(preset)
        except KeyError as exc:
            raise MemoryValidationError(str(exc.args[0])) from None

    async def get(self, memory_id: str, *, agent_id: str | None = None) -> MemoryEntry:
        """One memory of the agent.

        A memory its retention rule has expired is not found, even before a sweep archives it
        (``archived()`` and ``restore()`` reach it once it is in the archive).

        Raises:
            MemoryNotFoundError: no such id for this agent (another agent's id looks the same),
                or the memory has expired.
        """
        agent = scope_agent(agent_id)
        mid = check_id(memory_id)
        backend = await self._ready()
        entry = await backend.get(agent, mid)
        if entry is None:
            merged = await self._consolidated_original(backend, agent, mid)
            if merged is not None:
                return merged
        if entry is None or self._expired(entry, utc_now()):
            msg = f"memory {mid} not found for agent {agent!r}"
            raise MemoryNotFoundError(msg)
        return entry

    async def _live(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """Like :meth:`get`, but a consolidated original (archived) is not found."""
        entry = await self.get(memory_id, agent_id=agent_id)
        if entry.consolidated_into is not None:
            msg = (
                f"memory {entry.id} was consolidated into {entry.consolidated_into}: "
                "change that memory instead"
            )
            raise MemoryNotFoundError(msg)
        return entry

    @staticmethod
    async def _consolidated_original(
        backend: MemoryStore, agent: str, memory_id: str
    ) -> MemoryEntry | None:
        """The archived copy of a memory consolidation merged (None for any other archived one).

        Evicted, expired and deleted memories stay not found; only an original another memory
        now stands for keeps answering under its id.
        """
        archived = getattr(backend, "archived", None)
        if archived is None:
            return None
        try:
            rows = await archived(agent, memory_id=memory_id, limit=1)
        except MemoryCapabilityError:
            return None
        for row in rows:
            if row.entry.consolidated_into is not None:
                entry: MemoryEntry = row.entry
                return entry
        return None

    async def update(
        self,
        memory_id: str,
        *,
        agent_id: str | None = None,
        content: str | None = None,
        category: CategoryLike | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        label: str | None = None,
        importance: float | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryEntry:
        """Change a memory by storing a new version of it; returns the new version.

        Fields left as None keep their value. The old version is kept, superseded by the new
        one (``search(as_of=...)`` of an earlier moment still finds it, :meth:`history` lists
        both) and the change is audited. ``metadata`` replaces the old metadata.

        Raises:
            MemoryNotFoundError: no such memory for this agent.
            MemoryConflictError: the memory was already superseded (update the current one).
            MemoryValidationError: nothing to change, or an invalid value.
        """
        agent = scope_agent(agent_id)
        old = await self._live(memory_id, agent_id=agent)
        if old.superseded_by is not None:
            msg = (
                f"memory {old.id} was superseded by {old.superseded_by}: update the current version"
            )
            raise MemoryConflictError(msg)
        check_update(content, category, tags, metadata, label, importance, expires_at)
        meta = old.metadata
        request = _request(
            old.content if content is None else content,
            category=old.category if category is None else category,
            tags=meta.tags if tags is None else tags,
            metadata=meta.extra if metadata is None else metadata,
            # The new version starts now: the store closes the old one at this moment, so
            # as-of searches of any earlier time still see the old value.
            expires_at=old.expires_at if expires_at is None else expires_at,
            supersedes=old.id,
            label=meta.label if label is None else label,
            source=meta.source,
            importance=meta.importance if importance is None else importance,
            confidence=meta.confidence,
        )
        outcome = (await self._write(agent, [request], dedup=False, admission=False))[0]
        if self._response_cache is not None:
            # Responses built on the old version are stale now.
            self._response_cache.invalidate_memories([old.id])
        return await self.get(outcome.id or "", agent_id=agent)

    async def history(self, memory_id: str, *, agent_id: str | None = None) -> MemoryHistory:
        """Every version of a memory (give any version's id), oldest first, with its audit.

        A deleted memory still has a history: its versions that remain (none once every one
        was deleted) and the audit records of all of them (``deleted`` is then True), so
        what happened to an id a user was given stays answerable.

        Raises:
            MemoryNotFoundError: no such memory for this agent, and no audit record of it.
        """
        agent = scope_agent(agent_id)
        backend = await self._ready()
        try:
            first = await self.get(memory_id, agent_id=agent)
        except MemoryNotFoundError:
            return await self._history_from_audit(backend, agent, check_id(memory_id))
        records = await _agent_audit(backend, agent) if hasattr(backend, "export_rows") else []
        older = {
            str(r.details.get("superseded_by")): str(r.memory_id)
            for r in records
            if r.action == "memory.supersede" and r.memory_id
        }
        chain = [first]
        seen = {first.id}
        while chain[0].id in older and older[chain[0].id] not in seen:
            previous = await backend.get(agent, older[chain[0].id])
            if previous is None:  # deleted or archived since
                break
            chain.insert(0, previous)
            seen.add(previous.id)
        deleted = False
        while chain[-1].superseded_by is not None and chain[-1].superseded_by not in seen:
            newer = await backend.get(agent, chain[-1].superseded_by)
            if newer is None:
                # The newer version is gone: deleted (its audit says so) or archived.
                gone = chain[-1].superseded_by
                deleted = any(r.memory_id == gone and r.action == "memory.delete" for r in records)
                break
            chain.append(newer)
            seen.add(newer.id)
        ids = _version_ids(records, seen)
        audit = tuple(r for r in records if r.memory_id in ids)
        return MemoryHistory(
            memory_id=first.id, versions=tuple(chain), audit=audit, deleted=deleted
        )

    async def _history_from_audit(
        self, backend: MemoryStore, agent: str, memory_id: str
    ) -> MemoryHistory:
        """The history of an id that no longer answers ``get``: from the audit log."""
        records = await _agent_audit(backend, agent) if hasattr(backend, "export_rows") else []
        ids = _version_ids(records, {memory_id})
        audit = tuple(r for r in records if r.memory_id in ids)
        if not audit:
            msg = f"memory {memory_id} not found for agent {agent!r}, and no audit record of it"
            raise MemoryNotFoundError(msg)
        order = {r.memory_id: i for i, r in reversed(list(enumerate(audit)))}
        left = [e for e in [await backend.get(agent, i) for i in ids] if e is not None]
        left.sort(key=lambda e: order.get(e.id, len(audit)))
        return MemoryHistory(memory_id=memory_id, versions=tuple(left), audit=audit, deleted=True)

    async def get_all(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int | None = 100,
    ) -> builtins.list[MemoryEntry]:
        """Every current memory of a scope, newest first (mem0's ``get_all``).

        The scope is ``agent_id`` and/or ``user_id``/``run_id`` (see :meth:`add`), narrowed by
        ``session_id``, ``namespace``, ``category`` and ``filters`` as in :meth:`list`;
        ``limit=None`` returns all of them (read page by page).

        Raises:
            MemoryValidationError: no scope, a bad filter, or ``limit`` < 1.
        """
        agent = scope_agent(agent_id, user_id, run_id)
        if limit is not None and (isinstance(limit, bool) or limit < 1):
            msg = f"limit must be >= 1 or None, got {limit!r}"
            raise MemoryValidationError(msg)
        found: builtins.list[MemoryEntry] = []
        while limit is None or len(found) < limit:
            want = _PAGE if limit is None else min(_PAGE, limit - len(found))
            page = await self.list(
                agent_id=agent,
                category=category,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                limit=want,
                offset=len(found),
            )
            found.extend(page)
            if len(page) < want:
                break
        return found

    async def delete_all(
        self,
        *,
        agent_id: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> int:
        """Delete every memory of a scope, old versions included; returns how many (audited).

        Scoped like :meth:`get_all` and never wider: ``delete_all(user_id="alice")`` deletes
        alice's memories of the default agent and nothing else; a call without any scope is
        refused (:meth:`clear` empties one agent on purpose).

        Raises:
            MemoryValidationError: no scope, or a bad filter.
        """
        agent = scope_agent(agent_id, user_id, run_id)
        scoped = query_filters(
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        if not scoped:
            return await self.clear(agent_id=agent, category=category)
        deleted = 0
        while True:
            # Always the first page: what was deleted drops out of the next read. Through
            # list and delete, so a remote memory does the same over its routes.
            page = await self.list(
                agent_id=agent,
                category=category,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                include_superseded=True,
                limit=_PAGE,
            )
            gone = 0
            for entry in page:
                if await self.delete(entry.id, agent_id=agent):
                    gone += 1
            deleted += gone
            if gone == 0:  # nothing left (or only what a concurrent writer holds): stop
                return deleted

    async def count(
        self,
        *,
        agent_id: str | None = None,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Number of memories of the agent (of one category, passing the metadata filters)."""
        agent = scope_agent(agent_id, user_id, run_id)
        cat = None if category is None else parse_category(category)
        found = query_filters(
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )
        backend = await self._ready()
        return await backend.count(agent, category=cat, filters=found)

    async def list(
        self,
        *,
        agent_id: str | None = None,
        category: CategoryLike | None = None,
        label: str | None = None,
        tags: Sequence[str] | None = None,
        limit: int = 20,
        offset: int = 0,
        include_superseded: bool = False,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> builtins.list[MemoryEntry]:
        """The agent's memories, newest first, filtered by category, label, tags and metadata.

        ``filters`` and the scope ids work as in :meth:`search`; expired memories (retention
        age rules) are left out, as in :meth:`search`.
        """
        agent = scope_agent(agent_id, user_id, run_id)
        if offset < 0:
            msg = "offset must be >= 0"
            raise MemoryValidationError(msg)
        q = self._query(
            None,
            limit=limit,
            categories=category,
            tags=tags,
            label=label,
            include_superseded=include_superseded,
            filters=query_filters(
                filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            ),
        )
        backend = await self._ready()
        return await self._retained_list(backend, agent, q, offset)

    async def context(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        token_budget: int = 800,
        limit: int = 20,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        role: Literal["system", "user"] = "system",
        filter_strategy: MemoryFilterStrategy | None = None,
        mmr: bool = False,
        min_relevance: float = CONTEXT_MIN_RELEVANCE,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> MemoryContext:
        """Relevant memories packed into ``token_budget`` tokens, formatted for a prompt.

        Runs the context-injection pipeline: search -> relevance bar (only memories whose own
        relevance reaches ``min_relevance`` go in; none for an off-topic task) ->
        ``filter_strategy`` (e.g.
        ``NonInferableFilter()``; fails closed) -> optional MMR diversity -> greedy packing ->
        one chat message (``role``) with the memories between delimiters.

        Shared knowledge of the store (what agents :meth:`publish`) is included, marked
        ``(shared knowledge)`` and ranked without the personal boost, unless
        ``options.shared_knowledge_base`` is false. ``asked_at`` dates the task as in
        :meth:`search`.
        """
        from memvault.injection.context import ContextInjectionConfig

        strategy = self.context_strategy(
            categories=categories,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
            asked_at=asked_at,
            config=ContextInjectionConfig(
                role=role,
                max_memories=limit,
                filter_strategy=filter_strategy,
                mmr_enabled=mmr,
                min_relevance=min_relevance,
            ),
        )
        prepared = await strategy.prepare_context(
            scope_agent(agent_id, user_id, run_id), query, token_budget
        )
        # The skills it injected are on record before the context is handed out, so an outcome
        # reported to any process over this store counts them.
        # (A remote memory has no learning engine of its own: the server records them.)
        opened = getattr(self, "_extensions", None)
        if opened is not None and opened.opened("learning"):
            await self.learning.flush_injections()
        return prepared

    def injection_strategy(
        self,
        name: InjectionStrategyName | str | None = None,
        *,
        llm: LLMProvider | None = None,
        max_rounds: int = 2,
    ) -> ContextInjectionStrategy | ToolBasedInjectionStrategy | SelfEditingMemoryStrategy:
        """The injection strategy named by ``retrieval.strategy`` (or ``name``) over this memory.

        ``context`` injects retrieved memories as a message; ``tool_based`` gives the agent
        ``search_memory``/``recall_memory`` tools; ``self_editing`` keeps core memories in the
        system prompt and offers the six MemGPT-style tools.

        ``llm`` (else the memory's own ``llm``) turns on the Search-and-Ask loop of the
        tool-based strategy: ``search_memory`` checks whether the memories found answer the
        question and, if not, searches again with a reformulated query, up to ``max_rounds``
        extra searches. Without any LLM the tool searches once.

        Raises:
            MemoryConfigError: unknown strategy name, or ``max_rounds`` outside 1-5.
        """
        from memvault.injection.self_editing import SelfEditingMemoryStrategy

        raw = self._config.retrieval.strategy if name is None else name
        try:
            kind = InjectionStrategyName(raw)
        except ValueError:
            names = ", ".join(n.value for n in InjectionStrategyName)
            msg = f"unknown injection strategy {raw!r} (choose from {names})"
            raise MemoryConfigError(msg) from None
        policies = self._policies
        if kind is InjectionStrategyName.TOOL_BASED:
            return self._tool_strategy(llm if llm is not None else self.llm, max_rounds)
        if kind is InjectionStrategyName.SELF_EDITING:
            return SelfEditingMemoryStrategy(self, policies=policies)
        return self.context_strategy()

    def _tool_strategy(
        self, llm: LLMProvider | None, max_rounds: int
    ) -> ToolBasedInjectionStrategy:
        """The tool-based strategy; with ``llm``, its search runs the Search-and-Ask loop."""
        from memvault.injection.reformulation import LLMQueryReformulator, LLMSufficiencyChecker
        from memvault.injection.tool_based import (
            ToolBasedInjectionConfig,
            ToolBasedInjectionStrategy,
        )

        try:
            config = ToolBasedInjectionConfig(
                query_reformulation_enabled=llm is not None, max_reformulation_rounds=max_rounds
            )
        except ValidationError as exc:
            raise MemoryConfigError(model_error(exc).args[0]) from None
        if llm is None:
            return ToolBasedInjectionStrategy(self, config, policies=self._policies)
        return ToolBasedInjectionStrategy(
            self,
            config,
            reformulator=LLMQueryReformulator(llm),
            sufficiency_checker=LLMSufficiencyChecker(llm),
            policies=self._policies,
        )

    async def search_and_ask(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 5,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        llm: LLMProvider | None = None,
        max_rounds: int = 2,
    ) -> builtins.list[MemoryEntry]:
        """Search, and while an LLM finds the memories insufficient, search again reformulated.

        The tool-based strategy's Search-and-Ask loop (design document 003): retrieve -> ask
        ``llm`` (else the memory's own) whether the memories answer ``query`` -> reformulate ->
        re-retrieve, at most ``max_rounds`` extra searches; results of every round merged by
        id, best first, at most ``limit``. An LLM failure ends the loop with what was found.
        Without any LLM the deterministic fallback runs: the first search alone (every LLM
        path of memvault has one).

        Raises:
            MemoryConfigError: ``max_rounds`` outside 1-5.
            MemoryValidationError: blank query or agent, ``limit`` < 1, unknown category.
        """
        cats = _categories(categories)
        strategy = self._tool_strategy(llm if llm is not None else self.llm, max_rounds)
        return await strategy.search(check_agent(agent_id), query, limit=limit, categories=cats)

    def memory_tools(self, config: MemoryToolsConfig | None = None) -> MemoryTools:
        """InitRunner's memory tools (remember, recall, ...) over this memory."""
        from memvault.agent.memory_tools import MemoryTools

        return MemoryTools(self, config)

    def context_strategy(
        self,
        *,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        config: ContextInjectionConfig | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> ContextInjectionStrategy:
        """A :class:`ContextInjectionStrategy` over this memory, for agent frameworks.

        ``filters`` and the scope ids narrow every search it runs, and ``asked_at`` dates it
        (see :meth:`search`).
        """
        from memvault.injection.context import ContextInjectionStrategy

        cats = _categories(categories)
        asked = _aware(asked_at, "asked_at")
        query_filters(  # fail now, not at the first prompt
            filters, user_id=user_id, session_id=session_id, run_id=run_id, namespace=namespace
        )

        async def search(agent_id: str, text: str, limit: int) -> builtins.list[MemoryEntry]:
            own = await self.search(
                text,
                agent_id=agent_id,
                limit=limit,
                # Shared knowledge competes with the agent's own memories, without the personal
                # boost (hybrid_search exempts it); other agents' private memories never do.
                include_shared=self._shares_knowledge(),
                categories=cats,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                asked_at=asked,
            )
            pooled = await self._pooled(agent_id, text)
            if not pooled:
                return own
            # Org knowledge and pooled skills compete with the agent's own memories on the
            # same calibrated relevance scale.
            merged = sorted([*own, *pooled], key=lambda e: e.relevance_score or 0.0, reverse=True)
            return merged[: limit + len(pooled)]

        return ContextInjectionStrategy(
            search, config, policies=self._policies, on_injected=self._note_injected
        )

    def _shares_knowledge(self) -> bool:
        """True if injected contexts include shared knowledge.

        ``options.shared_knowledge_base`` decides (false: never), and the store must keep
        shared knowledge (every built-in one does).
        """
        if not self._config.options.shared_knowledge_base:
            return False
        backend = self._backend
        return isinstance(backend, SharedMemoryStore) and backend.supports_shared_access

    # -- automatic capture and working memory --------------------------------------------------

    async def capture_episode(
        self,
        summary: str,
        *,
        agent_id: str,
        trigger_type: str | None = None,
        category: str = "autonomous_run",
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Record an autonomous run's or a trigger's result summary as an episodic memory.

        InitRunner's episodic auto-capture: the episode's label is ``category``
        (``autonomous_run`` by default), ``trigger_type`` (``cron``, ``file_watch``,
        ``webhook`` ...) goes into the metadata under that key, and the source is
        ``auto_capture``. Admission control never drops a run summary. Never raises (a failure
        is logged): returns the id, or None when nothing was stored.
        """
        from memvault.agent.capture import capture_episode

        return await capture_episode(
            self,
            agent_id=agent_id,
            summary=summary,
            trigger_type=trigger_type,
            category=category,
            metadata=metadata,
        )

    async def capture_distillation(
        self,
        *,
        agent_id: str,
        task_id: str,
        outcome: str,
        turns: Sequence[TurnRecord | Mapping[str, Any]] = (),
        error: str | None = None,
        created_at: datetime | None = None,
    ) -> str | None:
        """Record a finished task's trajectory as an episodic memory tagged ``distillation``.

        ``turns`` are the task's turns (:class:`~memvault.agent.TurnRecord` or dicts with
        ``tokens`` and ``tool_calls``); ``outcome`` is how it ended (``completed``, ``error``,
        ``timeout`` ...). Fires for every outcome; never raises: returns the id, or None when
        nothing was stored (the failure is logged).
        """
        from memvault.agent.capture import DistillationRequest, TurnRecord, capture_distillation

        try:
            request = DistillationRequest(
                agent_id=agent_id,
                task_id=task_id,
                outcome=outcome,
                turns=tuple(
                    t if isinstance(t, TurnRecord) else TurnRecord.model_validate(dict(t))
                    for t in turns
                ),
                error=error,
                created_at=created_at,
            )
        except (ValidationError, TypeError, ValueError) as exc:
            logger.warning("distillation capture failed for agent %s: %s", agent_id, exc)
            return None
        return await capture_distillation(self, request)

    def working_memory(
        self, task_id: str, *, agent_id: str, token_budget: int | None = None
    ) -> WorkingMemory:
        """The agent's scratchpad for ``task_id``: the same object on every call, in process.

        Working memory is never persisted (design documents: WORKING is in-context): the
        scratchpad lives as long as this memory object, or until :meth:`clear_working`.
        ``token_budget`` sizes a new scratchpad (default 1000 tokens); an existing one keeps
        its own. At most 1,000 scratchpads are kept, the least recently used dropped first.

        Raises:
            MemoryValidationError: blank agent or task id, or ``token_budget`` < 1.
        """
        from memvault.agent.working import DEFAULT_WORKING_BUDGET, WorkingMemory

        key = (check_agent(agent_id), task_id)
        pads = self._working_pads
        pad = pads.pop(key, None)
        if pad is None:
            pad = WorkingMemory(task_id, token_budget=token_budget or DEFAULT_WORKING_BUDGET)
        pads[key] = pad  # most recently used last
        while len(pads) > _MAX_WORKING_PADS:
            pads.pop(next(iter(pads)))
        return pad

    async def working_note(
        self, task_id: str, content: str, *, agent_id: str, token_budget: int | None = None
    ) -> str:
        """Add a note to the agent's scratchpad for ``task_id``; returns the note's id.

        The oldest notes are dropped while the scratchpad exceeds its token budget.

        Raises:
            MemoryValidationError: blank content, a note bigger than the budget, bad ids.
        """
        return self.working_memory(task_id, agent_id=agent_id, token_budget=token_budget).add(
            content
        )

    async def working(self, task_id: str, *, agent_id: str) -> WorkingMemory:
        """The agent's scratchpad for ``task_id`` (an empty one if nothing was noted)."""
        return self.working_memory(task_id, agent_id=agent_id)

    async def clear_working(self, task_id: str, *, agent_id: str) -> int:
        """Forget the agent's scratchpad for ``task_id`` (the task is done); notes dropped."""
        pad = self._working_pads.pop((check_agent(agent_id), task_id), None)
        return 0 if pad is None else len(pad.notes)

    # -- learning -------------------------------------------------------------------------------

    @property
    def learning(self) -> LearningEngine:
        """The learning layer: lessons, skill pool, approvals, org memory (opened on first use).

        Its records (approvals, agent profiles, trajectories) live beside the memories: in the
        same SQLite file or PostgreSQL schema, in process for ``memory://`` or a given backend.
        """
        from memvault.learning.engine import open_learning

        return self._extensions.get(
            "learning",
            lambda: open_learning(
                self,
                self._learning_store,
                self._side_url(),
                self._config,
                llm=self._llm,
                audit=self._learning_audit,
            ),
        )

    def _side_url(self) -> str | None:
        """Where the side tables beside the memories live (a composite's default child)."""
        url = self._learning_url
        return self._config.composite_default_url() if url == COMPOSITE_URL else url

    async def _pooled(self, agent_id: str, text: str) -> builtins.list[MemoryEntry]:
        """Org knowledge and pooled skills for the agent's context (none over HTTP)."""
        return await self.learning.pool_entries(agent_id, text)

    def _note_injected(self, agent_id: str, entries: Sequence[MemoryEntry]) -> None:
        """Injected skills count as applied when the agent's next outcome is reported."""
        self.learning.note_injected(agent_id, entries)

    async def _policies(self) -> builtins.list[str]:
        """The core policies every injection strategy puts first."""
        return await self.learning.policies()

    async def _learning_audit(
        self, action: str, agent: str, memory_id: str | None, details: dict[str, Any]
    ) -> None:
        await self._audit(await self._ready(), action, agent, memory_id, details)

    async def learn_from(
        self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str
    ) -> LearnReport:
        """Learn from one finished task of ``agent_id``: the call to make after every task.

        ``outcome`` is a :class:`~memvault.learning.TaskOutcome` (or a dict of its fields):
        success, task metadata, the error, the tool calls, counts, a quality score and the
        injected skills the agent used. Failures (and, by ``procedural.capture``, good
        successes) become procedural lessons proposed by a separate LLM call, stored as
        ``non-inferable`` PROCEDURAL memories that the agent's next context includes. Never
        raises: problems are logged and returned in the report's ``error``.
        """
        from memvault.llm.metered import cost_scope

        task = outcome.get("task_id") if isinstance(outcome, Mapping) else None
        with cost_scope(
            agent_id, task_id=task if isinstance(task, str) else None, operation="learning"
        ):
            return await self.learning.learn_from(outcome, agent_id=agent_id)

    async def set_profile(
        self,
        agent_id: str,
        *,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Set an agent's role, department and seniority (propagation, skill pools, org writes).

        Raises:
            MemoryValidationError: a bad agent id, role, department or seniority.
        """
        return await self.learning.set_profile(
            agent_id, role=role, department=department, seniority=seniority
        )

    async def evolve(self, *, force: bool = False) -> EvolverReport:
        """Run one skill-evolver cycle now (``force``: even if ``procedural.evolver`` is off).

        Proposals go to the approval queue (``memory.learning.approvals()``); nothing reaches
        org memory until a human approves it.
        """
        return await self.learning.evolve(force=force)

    async def prune_procedural(self, *, agent_id: str) -> PruneReport:
        """Archive the agent's lessons that ``procedural.pruning`` drops (restorable)."""
        return await self.learning.prune(agent_id)

    # -- shared knowledge -------------------------------------------------------------------------

    async def _shared_store(self, *, settle: bool = True) -> SharedMemoryStore:
        """The backend, if it keeps shared knowledge and the configuration allows it."""
        if not self._config.options.shared_knowledge_base:
            msg = "shared knowledge is disabled (memory.options.shared_knowledge_base: false)"
            raise MemoryCapabilityError(msg)
        backend = await self._ready(settle=settle)
        if not isinstance(backend, SharedMemoryStore) or not backend.supports_shared_access:
            msg = f"the {backend.backend_name} backend offers no shared knowledge"
            raise MemoryCapabilityError(msg)
        return backend

    async def publish(
        self,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        scope: MemoryScope | str = MemoryScope.SHARED,
        kind: OrgFactKind | str | None = None,
    ) -> str:
        """Publish knowledge every agent of this store can find; returns its id.

        ``agent_id`` is the author: only the author can :meth:`retract` it. Shared knowledge is
        append-only and every publish is audited.

        ``scope="org"`` (:attr:`MemoryScope.ORG`) writes organisation memory instead: an org
        fact of ``kind`` (policy, adr, procedure, convention; default ``procedure`` for a
        procedural ``category``, else ``convention``) through org memory's write path, where
        ``org_memory.write_access`` decides by the author's seniority (its profile: policies are
        human-only, ADRs and procedures need senior or above). It is append-only, audited, and
        reaches every agent's context as org knowledge (see
        :meth:`memvault.learning.LearningEngine.publish_org`).

        Raises:
            MemoryCapabilityError: shared knowledge is disabled or the backend lacks it.
            MemoryValidationError: blank/oversized/NUL content, unknown category, kind or scope.
            MemoryPermissionError: an org fact the author may not write.
        """
        agent = check_agent(agent_id)
        wanted = _publish_scope(scope)
        request = _request(content, category=category, tags=tags, metadata=metadata)
        if wanted is MemoryScope.ORG:
            return await self.learning.publish_org(
                request.content,
                agent_id=agent,
                kind=kind,
                category=request.category,
                tags=request.metadata.tags,
                metadata=request.metadata.extra,
            )
        if kind is not None:
            msg = "kind is for org facts (scope='org'), not shared knowledge"
            raise MemoryValidationError(msg)
        if self._config.level is MemoryLevel.NONE:
            # An id is the only answer publish has, so it cannot report a dropped write.
            msg = "memory level 'none' stores nothing: shared knowledge cannot be published"
            raise MemoryCapabilityError(msg)
        backend = await self._shared_store()
        return await backend.publish(agent, request)

    async def search_shared(
        self, query: str, *, limit: int = 10, exclude_agent: str | None = None
    ) -> builtins.list[MemoryEntry]:
        """Search the shared knowledge of the whole store, best first, ``relevance_score`` set.

        ``exclude_agent`` leaves out that author's entries (e.g. an agent's own publications).
        """
        exclude = None if exclude_agent is None else check_agent(exclude_agent)
        if not isinstance(query, str) or not query.strip():
            msg = "search query is empty"
            raise MemoryValidationError(msg)
        q = self._query(query, limit=limit)
        backend = await self._shared_store()
        results = await backend.search_shared(q, exclude_agent=exclude)
        return [r.model_copy(update={"score": None}) for r in results]

    async def retract(self, memory_id: str, *, agent_id: str) -> bool:
        """Retract shared knowledge ``agent_id`` published: hidden from every search from now on,
        but kept (``get`` by the author shows ``retracted_at``) and audited.

        Returns False if the id is not a live shared entry of this author (absent, private,
        another agent's, or already retracted).
        """
        agent = check_agent(agent_id)
        mid = check_id(memory_id)
        backend = await self._shared_store()
        return await backend.retract(agent, mid)

    # -- bulk -----------------------------------------------------------------------------------

    async def export(
        self, path: str | Path | None = None, *, agent_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every memory (of one agent, or all) as JSON objects; written to ``path`` if given."""
        agent = None if agent_id is None else check_agent(agent_id)
        backend = await self._ready()
        data = [e.to_json() async for e in backend.export_entries(agent)]
        if path is not None:
            target = Path(path)
            tmp = target.with_name(target.name + ".tmp")
            try:
                tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
                tmp.replace(target)
            except OSError as exc:
                msg = f"cannot write export file {target}: {exc.strerror or exc}"
                raise MemoryStoreError(msg) from exc
        return data

    async def import_(
        self,
        source: str | Path | Sequence[Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        batch_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Import memories from an export (a file path or the parsed JSON array).

        Ids and timestamps are kept; ids already present are skipped, so importing twice is
        harmless. ``agent_id`` re-assigns every memory to that agent. Everything is validated
        before anything is written. Returns how many memories were added.
        """
        agent = None if agent_id is None else check_agent(agent_id)
        if batch_size < 1:
            msg = "batch_size must be >= 1"
            raise MemoryValidationError(msg)
        items = _load_export(source)
        entries: builtins.list[MemoryEntry] = []
        for i, item in enumerate(items):
            try:
                entries.append(MemoryEntry.from_json(dict(item), agent_id=agent))
            except (ValidationError, ValueError, KeyError, TypeError) as exc:
                detail = model_error(exc).args[0] if isinstance(exc, ValidationError) else exc
                msg = f"import item {i}: {detail}"
                raise MemoryValidationError(msg) from None
        if self._config.level is MemoryLevel.NONE:
            logger.info("memory.level_none.dropped", extra={"count": len(entries)})
            return 0  # level none: nothing is added (see _dropped)
        backend = await self._ready()
        added = 0
        # Batches bound memory and embedding time per transaction; importing is idempotent
        # (known ids are skipped), so an interrupted import is finished by running it again.
        for start in range(0, len(entries), batch_size):
            chunk = entries[start : start + batch_size]
            added += await backend.import_entries(chunk)
            if on_progress is not None:
                on_progress(start + len(chunk), len(entries))
        return added

    async def stats(self) -> StoreStats:
        """Counts of the whole store."""
        backend = await self._ready()
        return await backend.stats()

    async def agents(self) -> builtins.list[str]:
        """Agent ids that have memories."""
        backend = await self._ready()
        return await backend.agent_ids()

    async def close(self) -> None:
        """Release the store (idempotent)."""
        if self._closed:
            return
        await self._settle_access()
        self._closed = True
        if self._graph_tasks:
            await asyncio.gather(*self._graph_tasks, return_exceptions=True)
        if self._learning_store is not None and not self._extensions.opened("learning"):
            await self._learning_store.close()  # given, never opened: the engine closes its own
        if self._ops_backend is not None:
            await self._ops_backend.disconnect()  # given: handed over with the memory
        await self._extensions.close()
        await self._backend.disconnect()

    async def __aenter__(self) -> AsyncMemory:
        await self._ready()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
