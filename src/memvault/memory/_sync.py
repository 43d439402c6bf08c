"""``Memory``: the blocking facade over :class:`AsyncMemory`, on a private event-loop thread.

Every method runs the async core's method to completion. Memories still open when the
interpreter exits are closed first (before the thread pools shut down), so a script that never
calls ``close()`` exits cleanly with its data kept.
"""

from __future__ import annotations

import asyncio
import builtins
import importlib
import logging
import threading
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

from memvault._inline import allow_inline
from memvault._inputs import (
    CategoryLike,
)
from memvault.config import InjectionStrategyName, MemvaultConfig
from memvault.consolidation import (
    ConsolidationConfig,
    ConsolidationResult,
    ConsolidationStrategy,
)
from memvault.errors import (
    MemoryConnectionError,
    MemoryError,
)
from memvault.graph.models import RecallMode
from memvault.learning.models import (
    ORG_POOL,
    AgentProfile,
    ApprovalItem,
    ApprovalStatus,
    EvolverReport,
    LearnReport,
    OrgFact,
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
    OrgMemoryQuery,
    PruneReport,
    Seniority,
    TaskOutcome,
)
from memvault.memory._async import AsyncMemory, WriteResult
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    ChatMessage,
    MemoryCategory,
    MemoryEntry,
    MemoryHistory,
    MemoryScope,
    MemoryStoreRequest,
    StoreStats,
    ToolDefinition,
)
from memvault.protocols import Embedder, LLMProvider, MemoryStore
from memvault.retrieval.filters import MemoryFilterStrategy
from memvault.retrieval.packing import CONTEXT_MIN_RELEVANCE, MemoryContext
from memvault.retrieval.presets import RetrievalConfig
from memvault.write.retention import (
    RetentionPolicy,
    RetentionReport,
)

if TYPE_CHECKING:
    from memvault.agent.capture import TurnRecord
    from memvault.agent.memory_tools import MemoryTools, MemoryToolsConfig
    from memvault.agent.working import WorkingMemory
    from memvault.conversation.memory import SyncConversations
    from memvault.graph.forgetting import ForgettingReport
    from memvault.injection.context import ContextInjectionConfig, ContextInjectionStrategy
    from memvault.injection.self_editing import SelfEditingMemoryStrategy
    from memvault.injection.tool_based import ToolBasedInjectionStrategy
    from memvault.learning.engine import LearningEngine, PooledSkill
    from memvault.llm.cache import CachingLLM
    from memvault.retrieval.tiered import RecallTier, TieredRecall

__all__ = ["Memory", "SyncLearning", "SyncMemoryTools"]

logger = logging.getLogger("memvault.memory")

T = TypeVar("T")


class _LoopThread:
    """A private event loop on a daemon thread, for the sync facade."""

    def __init__(self) -> None:
        self._calls = 0
        self._calls_lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="memvault-loop", daemon=True
        )
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.loop.is_closed() or not self.loop.is_running():
            coro.close()  # never started: close it so no "never awaited" warning fires
            msg = "this memory is closed"
            raise MemoryConnectionError(msg)
        if threading.current_thread() is self.thread:
            coro.close()
            msg = "Memory (sync) was called from its own loop thread; use AsyncMemory there"
            raise RuntimeError(msg)
        with self._calls_lock:
            self._calls += 1
        try:
            return asyncio.run_coroutine_threadsafe(self._call(coro), self.loop).result()
        finally:
            with self._calls_lock:
                self._calls -= 1

    async def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        # While this is the only call waiting, nothing else needs the loop: stores may do their
        # blocking work on it instead of handing it to a thread and waiting (memvault._inline).
        allow_inline(self._alone)
        return await coro

    def _alone(self) -> bool:
        # At most one: a task a call started (an access-count write) may outlive it.
        return self._calls <= 1

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


# Sync memories still open when the interpreter exits. They are closed before the thread pools
# shut down: a plain atexit handler (or a weakref finalizer at exit) runs after
# concurrent.futures has refused new work, so closing the store there raised "cannot schedule new
# futures after shutdown" in every script that did not call close().
_OPEN: weakref.WeakSet[Memory] = weakref.WeakSet()


def _close_open_memories() -> None:
    for memory in list(_OPEN):
        memory.close()


def _register_exit_hook() -> None:
    # threading's own exit hooks run before the thread pools are shut down, in reverse order
    # of registration (concurrent.futures registers its hook when it is imported, before ours).
    # concurrent.futures.thread registers its hook when first imported, which asyncio does
    # lazily: import it now so that its hook is registered first and runs after ours.
    importlib.import_module("concurrent.futures.thread")
    register = getattr(threading, "_register_atexit", None)
    if register is None:  # pragma: no cover - every CPython since 3.9 has it
        import atexit

        atexit.register(_close_open_memories)
        return
    register(_close_open_memories)


_register_exit_hook()


class SyncMemoryTools:
    """:class:`~memvault.agent.memory_tools.MemoryTools` for the sync :class:`Memory`.

    The same tools and definitions; every call blocks until it is done and returns its text.
    """

    def __init__(self, tools: MemoryTools, run: Callable[[Coroutine[Any, Any, str]], str]) -> None:
        self._tools = tools
        self._run = run

    @property
    def tools(self) -> MemoryTools:
        """The awaitable tools underneath (for an async agent loop)."""
        return self._tools

    @property
    def config(self) -> MemoryToolsConfig:
        """The tool configuration."""
        return self._tools.config

    def get_tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The registered tools (only those of enabled memory types)."""
        return self._tools.get_tool_definitions()

    def handle_tool_call(self, agent_id: str, name: str, arguments: Any) -> str:
        """Run one tool call of the model; bad arguments give an ``error: ...`` string."""
        return self._run(self._tools.handle_tool_call(agent_id, name, arguments))

    def remember(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store a semantic memory; returns a confirmation with its id and category."""
        return self._run(self._tools.remember(agent_id, content, category))

    def learn_procedure(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store a procedural memory (injected into future system prompts)."""
        return self._run(self._tools.learn_procedure(agent_id, content, category))

    def record_episode(self, agent_id: str, content: str, category: str = "general") -> str:
        """Store an episodic memory (what happened)."""
        return self._run(self._tools.record_episode(agent_id, content, category))

    def recall(
        self,
        agent_id: str,
        query: str,
        top_k: int = 5,
        memory_types: Sequence[str] | None = None,
    ) -> str:
        """Search every (or the given) memory types; ``[Type | Category | Score | time]`` blocks."""
        return self._run(self._tools.recall(agent_id, query, top_k, memory_types))

    def list_memories(
        self,
        agent_id: str,
        category: str | None = None,
        limit: int = 20,
        memory_type: str | None = None,
    ) -> str:
        """The newest memories, as ``[type:category] (time) content`` lines."""
        return self._run(self._tools.list_memories(agent_id, category, limit, memory_type))

    def procedures_section(self, agent_id: str) -> str:
        """The ``## Learned Procedures and Policies`` system-prompt section ("" if none)."""
        return self._run(self._tools.procedures_section(agent_id))


class SyncLearning:
    """:class:`~memvault.learning.LearningEngine` for the sync :class:`Memory`.

    The same operations (learning, profiles, the skill pool, approvals, the evolver, org
    memory); every call blocks until it is done. :attr:`engine` is the awaitable engine
    underneath, for code that runs its own event loop.
    """

    def __init__(self, engine: LearningEngine, run: Callable[[Coroutine[Any, Any, Any]], Any]):
        self._engine = engine
        self._run = run

    @property
    def engine(self) -> LearningEngine:
        """The awaitable learning engine underneath."""
        return self._engine

    def learn_from(self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str) -> LearnReport:
        """Learn from one finished task (see :meth:`LearningEngine.learn_from`); never raises."""
        report: LearnReport = self._run(self._engine.learn_from(outcome, agent_id=agent_id))
        return report

    def set_profile(
        self,
        agent_id: str,
        *,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Create or replace an agent's profile (see :meth:`LearningEngine.set_profile`)."""
        profile: AgentProfile = self._run(
            self._engine.set_profile(
                agent_id, role=role, department=department, seniority=seniority
            )
        )
        return profile

    def get_profile(self, agent_id: str) -> AgentProfile:
        """The agent's profile (a default one when none was set)."""
        profile: AgentProfile = self._run(self._engine.get_profile(agent_id))
        return profile

    def publish_org(
        self,
        content: str,
        *,
        agent_id: str,
        kind: OrgFactKind | str | None = None,
        category: MemoryCategory = MemoryCategory.SEMANTIC,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """Append an org fact authored by an agent (see :meth:`LearningEngine.publish_org`)."""
        fact_id: str = self._run(
            self._engine.publish_org(
                content,
                agent_id=agent_id,
                kind=kind,
                category=category,
                tags=tags,
                metadata=metadata,
            )
        )
        return fact_id

    def write_org(self, request: OrgFactWriteRequest, *, author: OrgFactAuthor) -> str:
        """Append an org fact as ``author`` (a human may write policies; write access checked)."""
        fact_id: str = self._run(self._engine.org.write(request, author=author))
        return fact_id

    def query_org(self, query: OrgMemoryQuery | str) -> builtins.list[OrgFact]:
        """Extended org knowledge for ``query`` (a text or an :class:`OrgMemoryQuery`)."""
        q = OrgMemoryQuery(text=query) if isinstance(query, str) else query
        facts: tuple[OrgFact, ...] = self._run(self._engine.org.query(q))
        return builtins.list(facts)

    def policies(self) -> builtins.list[OrgFact]:
        """The core policies every injection strategy puts first."""
        facts: tuple[OrgFact, ...] = self._run(self._engine.org.list_policies())
        return builtins.list(facts)

    def skills(
        self, *, pool: str = ORG_POOL, include_superseded: bool = False
    ) -> builtins.list[PooledSkill]:
        """The skills of one pool (org by default), with application counts."""
        found: builtins.list[PooledSkill] = self._run(
            self._engine.skills(pool=pool, include_superseded=include_superseded)
        )
        return found

    def record_applications(self, skill_ids: Sequence[str]) -> int:
        """Count one application of each skill (ids of pooled skills or lessons)."""
        counted: int = self._run(self._engine.record_applications(skill_ids))
        return counted

    def evolve(self, *, force: bool = False) -> EvolverReport:
        """One skill-evolver cycle (see :meth:`LearningEngine.evolve`); never raises."""
        report: EvolverReport = self._run(self._engine.evolve(force=force))
        return report

    def approvals(
        self, *, status: ApprovalStatus | str | None = None, limit: int = 100
    ) -> builtins.list[ApprovalItem]:
        """Approval items, newest first (of one status)."""
        items: builtins.list[ApprovalItem] = self._run(
            self._engine.approvals(status=status, limit=limit)
        )
        return items

    def approval(self, item_id: str) -> ApprovalItem:
        """One approval item."""
        item: ApprovalItem = self._run(self._engine.approval(item_id))
        return item

    def approve(self, item_id: str, *, actor: str, reason: str | None = None) -> ApprovalItem:
        """Approve a pending proposal and apply it (``actor``: the human, ``human:alice``)."""
        item: ApprovalItem = self._run(self._engine.approve(item_id, actor=actor, reason=reason))
        return item

    def reject(self, item_id: str, *, actor: str, reason: str) -> ApprovalItem:
        """Reject a pending proposal with a reason (kept for the record)."""
        item: ApprovalItem = self._run(self._engine.reject(item_id, actor=actor, reason=reason))
        return item

    def prune(self, agent_id: str) -> PruneReport:
        """Archive the agent's lessons the pruning strategy drops."""
        report: PruneReport = self._run(self._engine.prune(agent_id))
        return report


def _shutdown(core: AsyncMemory, runner: _LoopThread) -> None:
    try:
        runner.run(core.close())
    except MemoryError:  # pragma: no cover - best effort at garbage collection
        logger.warning("memory.close.failed", exc_info=True)
    finally:
        runner.stop()


class Memory:
    """Typed, durable memory for agents (synchronous API over :class:`AsyncMemory`).

    Example::

        mem = Memory()                                  # ~/.memvault/memvault.db
        mem.add("Prefers dark mode", agent_id="dev-1")
        hits = mem.search("ui preferences", agent_id="dev-1")

        remote = Memory("http://host:8765", api_key="mvk_...")  # a `memvault serve` server
    """

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
    ) -> None:
        """Open (lazily) the store at ``url`` (see :class:`AsyncMemory`).

        ``api_key`` authenticates against a server URL (``Memory("http://host:8765",
        api_key=...)``; default ``$MEMVAULT_API_KEY``); an embedded store ignores it.
        """
        self._core = AsyncMemory(
            url,
            api_key=api_key,
            config=config,
            embedder=embedder,
            backend=backend,
            preset=preset,
            track_access=track_access,
            llm=llm,
        )
        self._runner = _LoopThread()
        self._learning: SyncLearning | None = None
        self._finalizer = weakref.finalize(self, _shutdown, self._core, self._runner)
        _OPEN.add(self)

    @property
    def backend(self) -> MemoryStore:
        """The backend this memory uses."""
        return self._core.backend

    @property
    def location(self) -> str:
        """Where the data lives."""
        return self._core.location

    @property
    def config(self) -> MemvaultConfig:
        """The configuration this memory runs with."""
        return self._core.config

    @property
    def aio(self) -> AsyncMemory:
        """The async core (use it only from this facade's own thread via ``_run``)."""
        return self._core

    @property
    def conversations(self) -> SyncConversations:
        """Seed 004's conversation store, compaction and embedding queue (blocking calls);
        see :attr:`AsyncMemory.conversations`."""
        from memvault.conversation.memory import SyncConversations

        return SyncConversations(self._core.conversations, self._run)

    @property
    def response_cache(self) -> CachingLLM | None:
        """The response cache in front of the memory's LLM (``[response_cache] enabled``)."""
        return self._core.response_cache

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coro)

    @overload
    def add(
        self,
        content: str,
        *,
        agent_id: str,
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
    def add(
        self,
        content: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str,
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

    def add(
        self,
        content: str | Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str,
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
        """Store one memory (or a conversation); its id(s). See :meth:`AsyncMemory.add`."""
        # The overloads of AsyncMemory.add cannot be chosen from a union: the core returns
        # a str for a str and a list for messages, which is this method's own contract.
        done: Any = self._run(
            self._core.add(
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
                infer=infer,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            )
        )
        return cast("str | builtins.list[str]", done)

    def add_messages(
        self,
        messages: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str,
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
        """Remember a conversation; the ids stored (see :meth:`AsyncMemory.add_messages`)."""
        return self._run(
            self._core.add_messages(
                messages,
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
        )

    def write(
        self,
        content: str,
        *,
        agent_id: str,
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
        """Store one memory and report what the write did (see :meth:`AsyncMemory.write`)."""
        return self._run(
            self._core.write(
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
        )

    def add_many(
        self,
        items: Sequence[MemoryStoreRequest | Mapping[str, Any]],
        *,
        agent_id: str,
        dedup: bool | None = None,
    ) -> list[str]:
        """Store many memories in one batch and transaction (see :meth:`AsyncMemory.add_many`)."""
        return self._run(self._core.add_many(items, agent_id=agent_id, dedup=dedup))

    def delete(self, memory_id: str, *, agent_id: str) -> bool:
        """Delete one memory; False if absent (see :meth:`AsyncMemory.delete`)."""
        return self._run(self._core.delete(memory_id, agent_id=agent_id))

    def clear(self, *, agent_id: str, category: CategoryLike | None = None) -> int:
        """Delete the agent's memories (see :meth:`AsyncMemory.clear`)."""
        return self._run(self._core.clear(agent_id=agent_id, category=category))

    @property
    def retention(self) -> RetentionPolicy:
        """The retention rules and caps (see :attr:`AsyncMemory.retention`)."""
        return self._core.retention

    def sweep(self, *, agent_id: str | None = None) -> RetentionReport:
        """Archive expired entries and evict over the caps (see :meth:`AsyncMemory.sweep`)."""
        return self._run(self._core.sweep(agent_id=agent_id))

    @property
    def learning(self) -> SyncLearning:
        """The learning layer, blocking (see :attr:`AsyncMemory.learning`): lessons, profiles,
        the skill pool, approvals, the evolver and org memory."""
        if self._learning is None:
            self._learning = SyncLearning(self._core.learning, self._run)
        return self._learning

    def learn_from(self, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str) -> LearnReport:
        """Learn from one finished task (see :meth:`AsyncMemory.learn_from`); never raises."""
        return self._run(self._core.learn_from(outcome, agent_id=agent_id))

    def set_profile(
        self,
        agent_id: str,
        *,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Set an agent's role, department and seniority (see :meth:`AsyncMemory.set_profile`)."""
        return self._run(
            self._core.set_profile(agent_id, role=role, department=department, seniority=seniority)
        )

    def evolve(self, *, force: bool = False) -> EvolverReport:
        """Run one skill-evolver cycle now (see :meth:`AsyncMemory.evolve`)."""
        return self._run(self._core.evolve(force=force))

    def prune_procedural(self, *, agent_id: str) -> PruneReport:
        """Archive the agent's pruned lessons (see :meth:`AsyncMemory.prune_procedural`)."""
        return self._run(self._core.prune_procedural(agent_id=agent_id))

    def graph_recall(
        self,
        query: str,
        *,
        agent_id: str,
        mode: RecallMode | str = RecallMode.SPREADING,
        hops: int | None = None,
        as_of: datetime | None = None,
        limit: int = 10,
    ) -> builtins.list[MemoryEntry]:
        """Memories reached through the entity graph (see :meth:`AsyncMemory.graph_recall`)."""
        return self._run(
            self._core.graph_recall(
                query, agent_id=agent_id, mode=mode, hops=hops, as_of=as_of, limit=limit
            )
        )

    def recall_tiered(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        tier: RecallTier | str | None = None,
        as_of: datetime | None = None,
    ) -> TieredRecall:
        """Search as deep as the query needs (see :meth:`AsyncMemory.recall_tiered`)."""
        return self._run(
            self._core.recall_tiered(query, agent_id=agent_id, limit=limit, tier=tier, as_of=as_of)
        )

    def forget(self, *, agent_id: str | None = None) -> builtins.list[ForgettingReport]:
        """One optical-forgetting pass (see :meth:`AsyncMemory.forget`)."""
        return self._run(self._core.forget(agent_id=agent_id))

    def promote_skills(self, *, agent_id: str) -> builtins.list[ApprovalItem]:
        """Propose dense graph regions as skills (see :meth:`AsyncMemory.promote_skills`)."""
        return self._run(self._core.promote_skills(agent_id=agent_id))

    def consolidate(
        self,
        *,
        agent_id: str,
        strategy: ConsolidationStrategy | str | None = None,
        llm: LLMProvider | None = None,
        dry_run: bool = False,
        config: ConsolidationConfig | None = None,
        min_age_days: float | None = None,
    ) -> ConsolidationResult:
        """Merge older memories into fewer ones (see :meth:`AsyncMemory.consolidate`)."""
        return self._run(
            self._core.consolidate(
                agent_id=agent_id,
                strategy=strategy,
                llm=llm,
                dry_run=dry_run,
                config=config,
                min_age_days=min_age_days,
            )
        )

    def consolidate_if_due(
        self,
        *,
        agent_id: str,
        session_ended: bool = False,
        strategy: ConsolidationStrategy | str = ConsolidationStrategy.SIMPLE,
        llm: LLMProvider | None = None,
    ) -> ConsolidationResult | None:
        """Consolidate when the interval says so (see :meth:`AsyncMemory.consolidate_if_due`)."""
        return self._run(
            self._core.consolidate_if_due(
                agent_id=agent_id, session_ended=session_ended, strategy=strategy, llm=llm
            )
        )

    def archived(
        self, *, agent_id: str, limit: int = 100, offset: int = 0
    ) -> builtins.list[ArchivedEntry]:
        """The agent's archived memories (see :meth:`AsyncMemory.archived`)."""
        return self._run(self._core.archived(agent_id=agent_id, limit=limit, offset=offset))

    def archive(
        self, ids: Sequence[str], *, agent_id: str, reason: str = "archive"
    ) -> dict[str, str]:
        """Move memories to the archive (see :meth:`AsyncMemory.archive`)."""
        return self._run(self._core.archive(ids, agent_id=agent_id, reason=reason))

    def restore(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """Bring an archived memory back (see :meth:`AsyncMemory.restore`)."""
        return self._run(self._core.restore(memory_id, agent_id=agent_id))

    def audit(
        self, *, agent_id: str | None = None, memory_id: str | None = None, limit: int = 100
    ) -> builtins.list[AuditRecord]:
        """Audit records (see :meth:`AsyncMemory.audit`)."""
        return self._run(self._core.audit(agent_id=agent_id, memory_id=memory_id, limit=limit))

    def search(
        self,
        query: str,
        *,
        agent_id: str,
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
        """Hybrid search, best first (see :meth:`AsyncMemory.search`)."""
        return self._run(
            self._core.search(
                query,
                agent_id=agent_id,
                limit=limit,
                categories=categories,
                tags=tags,
                since=since,
                until=until,
                as_of=as_of,
                include_shared=include_shared,
                include_superseded=include_superseded,
                min_relevance=min_relevance,
                preset=preset,
                explain=explain,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                asked_at=asked_at,
            )
        )

    def get(self, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """One memory of the agent (see :meth:`AsyncMemory.get`)."""
        return self._run(self._core.get(memory_id, agent_id=agent_id))

    def update(
        self,
        memory_id: str,
        *,
        agent_id: str,
        content: str | None = None,
        category: CategoryLike | None = None,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        label: str | None = None,
        importance: float | None = None,
        expires_at: datetime | None = None,
    ) -> MemoryEntry:
        """Change a memory by storing a new version (see :meth:`AsyncMemory.update`)."""
        return self._run(
            self._core.update(
                memory_id,
                agent_id=agent_id,
                content=content,
                category=category,
                tags=tags,
                metadata=metadata,
                label=label,
                importance=importance,
                expires_at=expires_at,
            )
        )

    def history(self, memory_id: str, *, agent_id: str) -> MemoryHistory:
        """Every version of a memory with its audit (see :meth:`AsyncMemory.history`)."""
        return self._run(self._core.history(memory_id, agent_id=agent_id))

    def count(
        self,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """Number of memories of the agent (see :meth:`AsyncMemory.count`)."""
        return self._run(
            self._core.count(
                agent_id=agent_id,
                category=category,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            )
        )

    def list(
        self,
        *,
        agent_id: str,
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
        """The agent's memories, newest first (see :meth:`AsyncMemory.list`)."""
        return self._run(
            self._core.list(
                agent_id=agent_id,
                category=category,
                label=label,
                tags=tags,
                limit=limit,
                offset=offset,
                include_superseded=include_superseded,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
            )
        )

    def context(
        self,
        query: str,
        *,
        agent_id: str,
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
        """Relevant memories packed for a prompt (see :meth:`AsyncMemory.context`)."""
        return self._run(
            self._core.context(
                query,
                agent_id=agent_id,
                token_budget=token_budget,
                limit=limit,
                categories=categories,
                role=role,
                filter_strategy=filter_strategy,
                mmr=mmr,
                min_relevance=min_relevance,
                filters=filters,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
                asked_at=asked_at,
            )
        )

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
        """An async :class:`ContextInjectionStrategy` over this store (use it from async code)."""
        return self._core.context_strategy(
            categories=categories,
            config=config,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
            asked_at=asked_at,
        )

    def injection_strategy(
        self,
        name: InjectionStrategyName | str | None = None,
        *,
        llm: LLMProvider | None = None,
        max_rounds: int = 2,
    ) -> ContextInjectionStrategy | ToolBasedInjectionStrategy | SelfEditingMemoryStrategy:
        """The configured async injection strategy (see :meth:`AsyncMemory.injection_strategy`).

        ``llm`` turns on the tool-based strategy's Search-and-Ask loop.
        """
        return self._core.injection_strategy(name, llm=llm, max_rounds=max_rounds)

    def search_and_ask(
        self,
        query: str,
        *,
        agent_id: str,
        limit: int = 5,
        categories: CategoryLike | Iterable[CategoryLike] | None = None,
        llm: LLMProvider | None = None,
        max_rounds: int = 2,
    ) -> builtins.list[MemoryEntry]:
        """Search, re-searching reformulated while an LLM finds the memories insufficient.

        See :meth:`AsyncMemory.search_and_ask`.
        """
        return self._run(
            self._core.search_and_ask(
                query,
                agent_id=agent_id,
                limit=limit,
                categories=categories,
                llm=llm,
                max_rounds=max_rounds,
            )
        )

    def capture_episode(
        self,
        summary: str,
        *,
        agent_id: str,
        trigger_type: str | None = None,
        category: str = "autonomous_run",
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Capture a run's result summary as an episode; id or None (never raises).

        See :meth:`AsyncMemory.capture_episode`.
        """
        return self._run(
            self._core.capture_episode(
                summary,
                agent_id=agent_id,
                trigger_type=trigger_type,
                category=category,
                metadata=metadata,
            )
        )

    def capture_distillation(
        self,
        *,
        agent_id: str,
        task_id: str,
        outcome: str,
        turns: Sequence[TurnRecord | Mapping[str, Any]] = (),
        error: str | None = None,
        created_at: datetime | None = None,
    ) -> str | None:
        """Capture a finished task's trajectory; id or None (never raises).

        See :meth:`AsyncMemory.capture_distillation`.
        """
        return self._run(
            self._core.capture_distillation(
                agent_id=agent_id,
                task_id=task_id,
                outcome=outcome,
                turns=turns,
                error=error,
                created_at=created_at,
            )
        )

    def working_memory(
        self, task_id: str, *, agent_id: str, token_budget: int | None = None
    ) -> WorkingMemory:
        """The agent's in-process scratchpad for a task (see :meth:`AsyncMemory.working_memory`)."""
        return self._core.working_memory(task_id, agent_id=agent_id, token_budget=token_budget)

    def working_note(
        self, task_id: str, content: str, *, agent_id: str, token_budget: int | None = None
    ) -> str:
        """Add a note to the agent's scratchpad for a task; the note's id."""
        return self._run(
            self._core.working_note(task_id, content, agent_id=agent_id, token_budget=token_budget)
        )

    def working(self, task_id: str, *, agent_id: str) -> WorkingMemory:
        """The agent's scratchpad for a task (see :meth:`AsyncMemory.working`)."""
        return self._run(self._core.working(task_id, agent_id=agent_id))

    def clear_working(self, task_id: str, *, agent_id: str) -> int:
        """Forget the agent's scratchpad for a task; how many notes it held."""
        return self._run(self._core.clear_working(task_id, agent_id=agent_id))

    def memory_tools(self, config: MemoryToolsConfig | None = None) -> SyncMemoryTools:
        """The memory tools (remember, recall, ...) over this store, as blocking calls.

        Each method runs to completion and returns its text, like every method of this facade
        (:meth:`AsyncMemory.memory_tools` gives the awaitable ones).
        """
        return SyncMemoryTools(self._core.memory_tools(config), self._run)

    def publish(
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
        """Publish shared knowledge, or an org fact with ``scope="org"``
        (see :meth:`AsyncMemory.publish`)."""
        return self._run(
            self._core.publish(
                content,
                agent_id=agent_id,
                category=category,
                tags=tags,
                metadata=metadata,
                scope=scope,
                kind=kind,
            )
        )

    def search_shared(
        self, query: str, *, limit: int = 10, exclude_agent: str | None = None
    ) -> builtins.list[MemoryEntry]:
        """Search shared knowledge (see :meth:`AsyncMemory.search_shared`)."""
        return self._run(self._core.search_shared(query, limit=limit, exclude_agent=exclude_agent))

    def retract(self, memory_id: str, *, agent_id: str) -> bool:
        """Retract shared knowledge (see :meth:`AsyncMemory.retract`)."""
        return self._run(self._core.retract(memory_id, agent_id=agent_id))

    def export(
        self, path: str | Path | None = None, *, agent_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every memory as JSON objects (see :meth:`AsyncMemory.export`)."""
        return self._run(self._core.export(path, agent_id=agent_id))

    def import_(
        self,
        source: str | Path | Sequence[Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        batch_size: int = 256,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Import an export (see :meth:`AsyncMemory.import_`)."""
        return self._run(
            self._core.import_(
                source, agent_id=agent_id, batch_size=batch_size, on_progress=on_progress
            )
        )

    def stats(self) -> StoreStats:
        """Counts of the whole store."""
        return self._run(self._core.stats())

    def agents(self) -> builtins.list[str]:
        """Agent ids that have memories."""
        return self._run(self._core.agents())

    def close(self) -> None:
        """Release the store and stop the loop thread (idempotent)."""
        self._finalizer()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
