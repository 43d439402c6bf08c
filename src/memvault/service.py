"""``MemoryService``: the one entry point for the REST server, the MCP server and the CLI.

Interfaces never touch a store directly: they authenticate a caller, turn it into an
:class:`Actor`, and call the service, which

* **authorises**: an agent actor reaches only its own memories plus the shared (organisational)
  knowledge of its tenant; a human or admin actor reaches every agent of its tenant. Scopes gate
  the kind of operation (``read`` < ``write`` < ``admin``); whole-store operations (clear,
  import, export of every agent, audit, sweep, consolidate) need ``admin``.
* **isolates tenants**: each tenant has its own store (its own SQLite file or PostgreSQL
  schema, :func:`memvault.backends.factory.create_memory_backend`), opened on first use and
  sharing one embedding model.
* **audits** destructive operations under the real actor and the stated reason
  (:func:`memvault._actor.acting_as`), in the same records the stores already write.
* raises only the typed :class:`~memvault.errors.MemoryError` family, which every interface maps
  in one table (HTTP statuses in :mod:`memvault.server.errors`).
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import ValidationError

from memvault._actor import acting_as
from memvault._inputs import CategoryLike
from memvault.agent.working import WorkingMemory
from memvault.api.auth import (
    DEFAULT_TENANT,
    Actor,
    ActorKind,
    Scope,
    check_reason,
    covers,
    parse_scopes,
    scope_rank,
)
from memvault.api.operations import Operation, get_operation
from memvault.api.requests import Request
from memvault.backends.factory import (
    check_tenant,
    create_memory_backend,
    keep_working_in_process,
    tenant_url,
    working_routed,
)
from memvault.config import COMPOSITE_URL, MemvaultConfig, load_config
from memvault.consolidation import ConsolidationResult, ConsolidationStrategy
from memvault.conversation.compaction import CompactionReport
from memvault.conversation.memory import ContextWindow, ConversationMemory, ConversationStatus
from memvault.conversation.models import (
    ConversationInfo,
    ConversationPage,
    MessageMetadata,
    MessageView,
)
from memvault.errors import (
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.finetune.config import (
    ActiveEmbedderSnapshot,
    CheckpointRecord,
    FineTunePlan,
    FineTuneRun,
    FineTuneStatus,
    PreflightResult,
)
from memvault.finetune.manager import FineTuneManager
from memvault.injection.context import CONTEXT_MIN_RELEVANCE
from memvault.learning.engine import PooledSkill
from memvault.learning.factory import open_learning_store
from memvault.learning.models import (
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
    is_pool_id,
)
from memvault.memory import AsyncMemory
from memvault.models import (
    ArchivedEntry,
    AuditRecord,
    ChatMessage,
    MemoryEntry,
    MemoryHistory,
    MemoryScope,
    StoreStats,
)
from memvault.protocols import Embedder, LLMProvider
from memvault.retrieval.packing import MemoryContext
from memvault.sessions import SessionRecord, SessionStore, open_session_store
from memvault.conversation.session_store import check_session_id
from memvault.validation import check_agent, model_error
from memvault.write.executor import WriteOutcome
from memvault.write.retention import RetentionReport

LLM_URL_ENV = "MEMVAULT_LLM_BASE_URL"
"""The OpenAI-compatible base URL of the LLM a service uses when it was given none."""
LLM_MODEL_ENV = "MEMVAULT_LLM_MODEL"
"""The model of that LLM (default :data:`DEFAULT_LLM_MODEL`)."""
DEFAULT_LLM_MODEL = "gpt-4o-mini"

__all__ = [
    "DEFAULT_TENANT",
    "Actor",
    "ActorKind",
    "MemoryService",
    "Scope",
    "covers",
    "parse_scopes",
    "scope_rank",
]


class MemoryService:
    """Authorised, audited, tenant-isolated access to memvault for every interface.

    ``MemoryService(config)`` serves every tenant of the configured store: the default tenant
    uses the configured URL itself, every other tenant its own store next to it. The stores
    open on first use and share one embedding model. ``MemoryService.for_memory(mem)`` serves
    one already open :class:`AsyncMemory` as the default (and only) tenant.
    """

    def __init__(
        self,
        config: MemvaultConfig | None = None,
        *,
        embedder: Embedder | None = None,
        llm: LLMProvider | None = None,
    ) -> None:
        self._config = config if config is not None else load_config()
        self._embedder = embedder
        self._llm = llm
        self._env_llm: LLMProvider | None = None
        self._memories: dict[str, AsyncMemory] = {}
        self._sessions: dict[str, SessionStore] = {}
        self._single_tenant = False
        self._fine_tuners: dict[str, FineTuneManager] = {}
        self._conversations: dict[str, ConversationMemory] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    @classmethod
    def for_memory(cls, memory: AsyncMemory, *, llm: LLMProvider | None = None) -> MemoryService:
        """A service over one open memory; only the default tenant exists."""
        service = cls(memory.config, llm=llm)
        service._memories[DEFAULT_TENANT] = memory
        service._single_tenant = True
        return service

    @property
    def config(self) -> MemvaultConfig:
        """The configuration every tenant's store is built from."""
        return self._config

    # -- tenants --------------------------------------------------------------------------------

    async def memory(self, tenant: str = DEFAULT_TENANT) -> AsyncMemory:
        """The tenant's memory, opened on first use.

        Raises:
            MemoryPermissionError: a single-memory service asked for another tenant.
            MemoryConfigError: an invalid tenant name, or the service is closed.
        """
        name = check_tenant(tenant)
        found = self._memories.get(name)
        if found is not None:
            return found
        if self._single_tenant:
            msg = f"tenant {name!r} does not exist on this server"
            raise MemoryPermissionError(msg)
        async with self._lock:
            if self._closed:
                msg = "the memory service is closed"
                raise MemoryConfigError(msg)
            found = self._memories.get(name)
            if found is None:
                # Without an embedder given here, each tenant's store gets the one the
                # configuration names, or (naming none) the model that store was built with:
                # a read of the store, so off the event loop.
                # WORKING memories stay in the server's process unless the configuration
                # routes them to a store (memvault.backends.working).
                store = await asyncio.to_thread(
                    create_memory_backend,
                    working_routed(self._config),
                    embedder=self._embedder,
                    tenant=None if name == DEFAULT_TENANT else name,
                )
                backend = keep_working_in_process(store, self._config)
                found = AsyncMemory(
                    backend=backend,
                    config=self._config,
                    llm=self._llm,
                    learning_store=open_learning_store(self._tenant_store_url(name)),
                )
                self._memories[name] = found
        return found

    def _tenant_store_url(self, tenant: str) -> str:
        """The storage URL of a tenant's side tables (learning records)."""
        url = self._config.resolved_url()
        if url == COMPOSITE_URL:
            url = self._config.composite_default_url()
        return url if tenant == DEFAULT_TENANT else tenant_url(url, tenant)

    async def _sessions_of(self, tenant: str) -> SessionStore:
        store = self._sessions.get(tenant)
        if store is None:
            memory = await self.memory(tenant)
            url = memory.location if self._single_tenant else self._config.resolved_url()
            if not self._single_tenant and tenant != DEFAULT_TENANT:
                url = tenant_url(url, tenant)
            conv = self._config.conversation
            store = self._sessions.setdefault(
                tenant, open_session_store(url, storage=conv.session_storage, prune=conv.prune)
            )
        return store

    async def close(self) -> None:
        """Close every tenant's store (idempotent)."""
        async with self._lock:
            self._closed = True
            memories, self._memories = list(self._memories.values()), {}
            sessions, self._sessions = list(self._sessions.values()), {}
            conversations, self._conversations = list(self._conversations.values()), {}
        for conversation in conversations:  # first: their queues embed what is pending
            await conversation.close()
        for store in sessions:
            await store.close()
        for memory in memories:
            await memory.close()

    # -- authorisation --------------------------------------------------------------------------

    @staticmethod
    def _check(actor: Actor, scope: Scope, agent_id: str | None) -> str | None:
        """The validated agent id the actor may reach with ``scope``.

        ``agent_id=None`` means the whole tenant, which agent actors never reach.
        """
        if not actor.allows(scope):
            msg = f"{actor.label} lacks the {scope.value!r} scope"
            raise MemoryPermissionError(msg)
        if agent_id is None:
            if actor.kind is ActorKind.AGENT:
                msg = f"{actor.label} may only use its own memories (give agent_id)"
                raise MemoryPermissionError(msg)
            return None
        agent = check_agent(agent_id)
        if actor.kind is ActorKind.AGENT and (agent != actor.name or is_pool_id(agent)):
            # Skill pools (_org, _role:*, _dept:*) are written through approvals and org
            # memory's write rules only, never by an agent key named after one.
            msg = f"{actor.label} may not use the memories of agent {agent!r}"
            raise MemoryPermissionError(msg)
        return agent

    def _agent(self, actor: Actor, scope: Scope, agent_id: str) -> str:
        agent = self._check(actor, scope, agent_id)
        assert agent is not None  # _check returns the id it was given
        return agent

    # -- the operation table --------------------------------------------------------------------

    async def call(
        self,
        actor: Actor,
        operation: Operation | str,
        request: Request | Mapping[str, Any],
    ) -> Any:
        """Run one declared operation (:mod:`memvault.api.operations`) for ``actor``.

        ``request`` is the operation's input model or plain data for it. The declared scope is
        checked first; the implementation (the service method the operation names) authorises
        the agent and tenant as when it is called directly. REST, MCP and the CLI's ``api``
        group call every operation through here.

        Raises:
            MemoryValidationError: unknown operation or invalid input.
            MemoryPermissionError: the actor lacks the operation's scope (or the agent).
        """
        op = get_operation(operation) if isinstance(operation, str) else operation
        if not actor.allows(op.scope):
            msg = f"{actor.label} lacks the {op.scope.value!r} scope"
            raise MemoryPermissionError(msg)
        if not isinstance(request, op.request):
            try:
                request = op.parse(cast("Mapping[str, Any]", request))
            except ValidationError as exc:
                raise model_error(exc) from None
        if op.invoke is not None:
            return await op.invoke(self, actor, request)
        method = getattr(self, op.implementation)
        return await method(actor, **op.arguments(request))

    # -- memories -------------------------------------------------------------------------------

    async def store(
        self,
        actor: Actor,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = "semantic",
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
    ) -> WriteOutcome:
        """Store one memory through the write path (dedup, supersession, caps, admission)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.write(
                content,
                agent_id=agent,
                user_id=user_id,
                session_id=session_id,
                run_id=run_id,
                namespace=namespace,
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
            )

    async def store_many(
        self,
        actor: Actor,
        items: Sequence[Mapping[str, Any]],
        *,
        agent_id: str,
        dedup: bool | None = None,
    ) -> builtins.list[str]:
        """Store many memories in one batch; ids in input order."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.add_many(items, agent_id=agent, dedup=dedup)

    async def store_messages(
        self,
        actor: Actor,
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
        """Remember a conversation: its turns, or (``infer``) the facts the LLM extracts."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.add_messages(
                messages,
                agent_id=agent,
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

    async def search(
        self,
        actor: Actor,
        query: str,
        *,
        agent_id: str,
        limit: int = 10,
        categories: Iterable[CategoryLike] | None = None,
        tags: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
        include_shared: bool = False,
        include_superseded: bool = False,
        min_relevance: float = 0.0,
        explain: bool = False,
        preset: str | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> builtins.list[MemoryEntry]:
        """Hybrid search of the agent's memories (and the shared knowledge), best first."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.search(
            query,
            agent_id=agent,
            limit=limit,
            categories=None if categories is None else list(categories),
            tags=tags,
            since=since,
            until=until,
            as_of=as_of,
            include_shared=include_shared,
            include_superseded=include_superseded,
            min_relevance=min_relevance,
            explain=explain,
            preset=preset,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
            asked_at=asked_at,
        )

    async def context(
        self,
        actor: Actor,
        query: str,
        *,
        agent_id: str,
        token_budget: int = 800,
        limit: int = 20,
        categories: Iterable[CategoryLike] | None = None,
        role: Literal["system", "user"] = "system",
        mmr: bool = False,
        min_relevance: float = CONTEXT_MIN_RELEVANCE,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
        asked_at: datetime | None = None,
    ) -> MemoryContext:
        """Relevant memories packed into ``token_budget`` tokens for a prompt."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.context(
            query,
            agent_id=agent,
            token_budget=token_budget,
            limit=limit,
            categories=None if categories is None else list(categories),
            role=role,
            mmr=mmr,
            min_relevance=min_relevance,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
            asked_at=asked_at,
        )

    async def search_and_ask(
        self,
        actor: Actor,
        query: str,
        *,
        agent_id: str,
        limit: int = 5,
        categories: Iterable[CategoryLike] | None = None,
        max_rounds: int = 2,
    ) -> builtins.list[MemoryEntry]:
        """Search-and-Ask over the agent's memories with the server's LLM.

        The LLM is the service's (``MemoryService(llm=...)``), else the memory's, else an
        OpenAI-compatible one named by ``MEMVAULT_LLM_BASE_URL`` and ``MEMVAULT_LLM_MODEL``
        (the variables every LLM option of the CLI reads). With none, the first search alone
        is the answer (the deterministic fallback).
        """
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.search_and_ask(
            query,
            agent_id=agent,
            limit=limit,
            categories=None if categories is None else list(categories),
            llm=self._ask_llm(),
            max_rounds=max_rounds,
        )

    def _ask_llm(self) -> LLMProvider | None:
        if self._llm is not None:
            return self._llm
        if self._env_llm is None and os.environ.get(LLM_URL_ENV):
            from memvault.llm import OpenAICompatibleLLM

            model = os.environ.get(LLM_MODEL_ENV) or DEFAULT_LLM_MODEL
            self._env_llm = OpenAICompatibleLLM(os.environ[LLM_URL_ENV], model)
        return self._env_llm

    # -- automatic capture and working memory -----------------------------------------------

    async def capture_episode(
        self,
        actor: Actor,
        summary: str,
        *,
        agent_id: str,
        trigger_type: str | None = None,
        category: str = "autonomous_run",
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Capture a run's summary as an episode (see :meth:`AsyncMemory.capture_episode`)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.capture_episode(
                summary,
                agent_id=agent,
                trigger_type=trigger_type,
                category=category,
                metadata=metadata,
            )

    async def capture_distillation(
        self,
        actor: Actor,
        *,
        agent_id: str,
        task_id: str,
        outcome: str,
        turns: Sequence[Any] = (),
        error: str | None = None,
        created_at: datetime | None = None,
    ) -> str | None:
        """Capture a task's trajectory (see :meth:`AsyncMemory.capture_distillation`)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        plain = [t.model_dump() if hasattr(t, "model_dump") else dict(t) for t in turns]
        with acting_as(actor.label):
            return await memory.capture_distillation(
                agent_id=agent,
                task_id=task_id,
                outcome=outcome,
                turns=plain,
                error=error,
                created_at=created_at,
            )

    async def working_note(
        self,
        actor: Actor,
        task_id: str,
        content: str,
        *,
        agent_id: str,
        token_budget: int | None = None,
    ) -> str:
        """Add a note to the agent's working memory for a task (in the server's process)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.working_note(
            task_id, content, agent_id=agent, token_budget=token_budget
        )

    async def working(self, actor: Actor, task_id: str, *, agent_id: str) -> WorkingMemory:
        """The agent's working memory for a task."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.working(task_id, agent_id=agent)

    async def clear_working(self, actor: Actor, task_id: str, *, agent_id: str) -> int:
        """Forget the agent's working memory for a task; how many notes it held."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.clear_working(task_id, agent_id=agent)

    async def get(self, actor: Actor, memory_id: str, *, agent_id: str) -> MemoryEntry:
        """One memory of the agent (MemoryNotFoundError when absent or another agent's)."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.get(memory_id, agent_id=agent)

    async def delete(
        self, actor: Actor, memory_id: str, *, agent_id: str, reason: str | None = None
    ) -> bool:
        """Delete one memory, audited under the actor (and ``reason``); False if absent."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.delete(memory_id, agent_id=agent)

    async def update(
        self,
        actor: Actor,
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
        reason: str | None = None,
    ) -> MemoryEntry:
        """Store a new version of a memory (the old one is kept, superseded); audited."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.update(
                memory_id,
                agent_id=agent,
                content=content,
                category=category,
                tags=tags,
                metadata=metadata,
                label=label,
                importance=importance,
                expires_at=expires_at,
            )

    async def history(self, actor: Actor, memory_id: str, *, agent_id: str) -> MemoryHistory:
        """Every version of a memory, oldest first, with its audit records."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.history(memory_id, agent_id=agent)

    async def list(
        self,
        actor: Actor,
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
        """The agent's memories, newest first."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.list(
            agent_id=agent,
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

    async def count(
        self,
        actor: Actor,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        filters: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        namespace: str | None = None,
    ) -> int:
        """How many memories the agent has (of one category, passing the metadata filters)."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.count(
            agent_id=agent,
            category=category,
            filters=filters,
            user_id=user_id,
            session_id=session_id,
            run_id=run_id,
            namespace=namespace,
        )

    async def clear(
        self,
        actor: Actor,
        *,
        agent_id: str,
        category: CategoryLike | None = None,
        reason: str | None = None,
    ) -> int:
        """Delete every memory of the agent (or one category); needs ``admin``; audited."""
        agent = self._agent(actor, Scope.ADMIN, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.clear(agent_id=agent, category=category)

    async def export(
        self, actor: Actor, *, agent_id: str | None = None, path: str | Path | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every memory of one agent (``read``) or of the whole tenant (``admin``) as JSON.

        ``path`` (local callers only, e.g. the CLI) also writes the JSON file atomically.
        """
        if agent_id is None:
            self._check(actor, Scope.ADMIN, None)
            agent = None
        else:
            agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.export(path, agent_id=agent)

    async def import_(
        self,
        actor: Actor,
        source: str | Path | Sequence[Mapping[str, Any]],
        *,
        agent_id: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Import exported memories (idempotent); needs ``admin``. Returns how many were added.

        ``source`` is the parsed JSON array, or (local callers only) an export file's path.
        """
        agent = self._check(actor, Scope.ADMIN, agent_id)
        if isinstance(source, bytes) or not isinstance(source, (str, Path, Sequence)):
            msg = "import expects a list of exported memories"
            raise MemoryValidationError(msg)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.import_(source, agent_id=agent, on_progress=on_progress)

    async def stats(self, actor: Actor) -> StoreStats:
        """Counts of the tenant's store (not for agent actors)."""
        self._check(actor, Scope.READ, None)
        memory = await self.memory(actor.tenant)
        return await memory.stats()

    async def agents(self, actor: Actor) -> builtins.list[str]:
        """Agent ids with memories; an agent actor sees only itself."""
        if actor.kind is ActorKind.AGENT:
            self._check(actor, Scope.READ, actor.name)
            return [actor.name]
        self._check(actor, Scope.READ, None)
        memory = await self.memory(actor.tenant)
        return await memory.agents()

    # -- lifecycle ------------------------------------------------------------------------------

    async def consolidate(
        self,
        actor: Actor,
        *,
        agent_id: str,
        strategy: ConsolidationStrategy | str | None = None,
        dry_run: bool = False,
        reason: str | None = None,
        min_age_days: float | None = None,
    ) -> ConsolidationResult:
        """Consolidate the agent's memories (originals archived); needs ``admin``.

        ``strategy`` None follows the configuration (see :meth:`AsyncMemory.consolidate`), as
        does ``min_age_days`` None (``consolidation.min_age_days``).
        """
        agent = self._agent(actor, Scope.ADMIN, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.consolidate(
                agent_id=agent,
                strategy=strategy,
                llm=self._llm,
                dry_run=dry_run,
                min_age_days=min_age_days,
            )

    async def sweep(self, actor: Actor, *, agent_id: str | None = None) -> RetentionReport:
        """Enforce retention now (expired and over-cap entries go to the archive)."""
        agent = self._check(actor, Scope.ADMIN, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.sweep(agent_id=agent)

    async def archived(
        self, actor: Actor, *, agent_id: str, limit: int = 100, offset: int = 0
    ) -> builtins.list[ArchivedEntry]:
        """The agent's archived memories, newest first."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.archived(agent_id=agent, limit=limit, offset=offset)

    async def archive(
        self,
        actor: Actor,
        ids: Sequence[str],
        *,
        agent_id: str,
        reason: str = "archive",
    ) -> dict[str, str]:
        """Move the agent's memories to the archive (restorable); original id -> archive id."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            msg = "ids must be a list of memory ids"
            raise MemoryValidationError(msg)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.archive(ids, agent_id=agent, reason=reason)

    async def restore(
        self, actor: Actor, memory_id: str, *, agent_id: str, reason: str | None = None
    ) -> MemoryEntry:
        """Bring an archived memory back under its original id (audited)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.restore(memory_id, agent_id=agent)

    async def audit(
        self,
        actor: Actor,
        *,
        agent_id: str | None = None,
        memory_id: str | None = None,
        limit: int = 100,
    ) -> builtins.list[AuditRecord]:
        """Audit records (of one agent and/or memory), oldest first; needs ``admin``."""
        agent = self._check(actor, Scope.ADMIN, agent_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            msg = "limit must be an integer between 1 and 10000"
            raise MemoryValidationError(msg)
        memory = await self.memory(actor.tenant)
        return await memory.audit(agent_id=agent, memory_id=memory_id, limit=limit)

    # -- shared knowledge -----------------------------------------------------------------------

    async def publish(
        self,
        actor: Actor,
        content: str,
        *,
        agent_id: str,
        category: CategoryLike = "semantic",
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        scope: MemoryScope | str = MemoryScope.SHARED,
        kind: OrgFactKind | str | None = None,
    ) -> str:
        """Publish shared knowledge authored by ``agent_id``; returns its id (audited).

        ``scope="org"`` appends an org fact authored by the agent ``agent_id`` (agent keys:
        only themselves), checked against ``org_memory.write_access`` by that agent's
        seniority, so no agent key can write a policy this way; humans write policies with
        :meth:`org_write`.
        """
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.publish(
                content,
                agent_id=agent,
                category=category,
                tags=tags,
                metadata=metadata,
                scope=scope,
                kind=kind,
            )

    async def search_shared(
        self, actor: Actor, query: str, *, limit: int = 10, exclude_agent: str | None = None
    ) -> builtins.list[MemoryEntry]:
        """Search the tenant's shared knowledge (every author), best first."""
        self._check(actor, Scope.READ, actor.name if actor.kind is ActorKind.AGENT else None)
        memory = await self.memory(actor.tenant)
        return await memory.search_shared(query, limit=limit, exclude_agent=exclude_agent)

    async def retract(
        self, actor: Actor, memory_id: str, *, agent_id: str, reason: str | None = None
    ) -> bool:
        """Retract shared knowledge the agent published (kept, hidden, audited)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label, why):
            return await memory.retract(memory_id, agent_id=agent)

    # -- sessions -------------------------------------------------------------------------------

    async def save_session(
        self,
        actor: Actor,
        session_id: str,
        messages: Sequence[ChatMessage],
        *,
        agent_id: str,
    ) -> SessionRecord:
        """Create or replace one session's message history (system messages are kept out)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        sid = check_session_id(session_id)
        store = await self._sessions_of(actor.tenant)
        kept = [m for m in messages if m.role != "system"]
        return await store.save(agent, sid, kept)

    async def sessions(
        self, actor: Actor, *, agent_id: str, limit: int | None = None
    ) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first."""
        agent = self._agent(actor, Scope.READ, agent_id)
        store = await self._sessions_of(actor.tenant)
        return await store.list(agent, limit=limit)

    async def session(
        self, actor: Actor, session_id: str | None = None, *, agent_id: str
    ) -> SessionRecord | None:
        """One session of the agent (the latest when ``session_id`` is None), or None."""
        agent = self._agent(actor, Scope.READ, agent_id)
        store = await self._sessions_of(actor.tenant)
        if session_id is None:
            return await store.latest(agent)
        return await store.get(agent, check_session_id(session_id))

    async def delete_session(self, actor: Actor, session_id: str, *, agent_id: str) -> bool:
        """Delete one session of the agent; False if it has none with that id."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        store = await self._sessions_of(actor.tenant)
        return await store.delete(agent, check_session_id(session_id))

    # -- conversations (seed 004's message store) ---------------------------------------------

    async def _conversations_of(self, tenant: str) -> ConversationMemory:
        """The tenant's conversation store (beside its memories), opened on first use.

        With ``conversation.session_storage = "messages"`` it is the store the sessions use,
        so ``/v1/sessions`` and ``/v1/conversations`` read the same log.
        """
        found = self._conversations.get(tenant)
        if found is not None:
            return found
        from memvault.conversation.factory import open_conversation_store
        from memvault.conversation.sessions import ConversationSessionStore

        memory = await self.memory(tenant)
        if self._single_tenant:
            # The memory's own (closed with it): the library's Memory.conversations, the CLI's
            # ``memvault api`` and this service then read and write the same log.
            return memory.conversations
        sessions = await self._sessions_of(tenant)
        shared = isinstance(sessions, ConversationSessionStore)
        if isinstance(sessions, ConversationSessionStore):  # (repeated for mypy's narrowing)
            store = sessions.conversations
        else:
            # The same place the sessions live (the tenant's file or schema).
            url = self._config.resolved_url()
            store = open_conversation_store(
                url if tenant == DEFAULT_TENANT else tenant_url(url, tenant)
            )
        made = ConversationMemory(
            store,
            config=self._config.conversation,
            embedder=memory.backend.embedder,
            llm=self._ask_llm() or memory.llm,
            owns_store=not shared,
        )
        async with self._lock:
            if self._closed:
                await made.close()
                msg = "the memory service is closed"
                raise MemoryConfigError(msg)
            kept = self._conversations.setdefault(tenant, made)
        if kept is not made:
            await made.close()
        return kept

    @staticmethod
    def _visible(actor: Actor, view: str) -> MessageView:
        """The view the actor may read: agents the agent view only, ``all`` admins only."""
        if view not in ("agent", "user", "all"):
            msg = f"view must be 'agent', 'user' or 'all', got {view!r}"
            raise MemoryValidationError(msg)
        if view != "agent" and actor.kind is ActorKind.AGENT:
            # Agents never see what was hidden from them (agent_visible=False).
            msg = f"{actor.label} may only read the agent view of a conversation"
            raise MemoryPermissionError(msg)
        if view == "all" and not actor.allows(Scope.ADMIN):
            msg = f"{actor.label} lacks the 'admin' scope (the 'all' view is for audits)"
            raise MemoryPermissionError(msg)
        return cast("MessageView", view)

    async def _conversation_info(
        self, conversations: ConversationMemory, agent: str, session_id: str
    ) -> ConversationInfo:
        info = await conversations.store.conversation(agent, session_id)
        if info is None:
            msg = f"no conversation {session_id!r} for agent {agent!r}"
            raise MemoryNotFoundError(msg)
        return info

    async def conversation_append(
        self,
        actor: Actor,
        session_id: str,
        messages: Sequence[ChatMessage | Mapping[str, Any]],
        *,
        agent_id: str,
    ) -> ConversationPage:
        """Append turns to the session's conversation (created on the first append).

        Each item is a chat message (``role``, ``content``, ``name``) with optional
        ``agent_visible``, ``user_visible`` and ``focus_pinned`` (seed 004's
        ``MessageMetadata``). Everything is stored in one transaction before this returns;
        with the embedding queue on, vectors follow in the background.
        """
        agent = self._agent(actor, Scope.WRITE, agent_id)
        sid = check_session_id(session_id)
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
            msg = "messages must be a list of messages"
            raise MemoryValidationError(msg)
        chats: builtins.list[ChatMessage] = []
        metas: builtins.list[MessageMetadata] = []
        keys = ("agent_visible", "user_visible", "focus_pinned")
        for i, item in enumerate(messages):
            if isinstance(item, ChatMessage):
                chats.append(item)
                metas.append(MessageMetadata())
                continue
            if not isinstance(item, Mapping):
                msg = f"message {i} must be an object with role and content"
                raise MemoryValidationError(msg)
            try:
                metas.append(MessageMetadata(**{k: item[k] for k in keys if k in item}))
                chats.append(ChatMessage(**{k: v for k, v in item.items() if k not in keys}))
            except ValidationError as exc:
                raise model_error(exc) from None
        conversations = await self._conversations_of(actor.tenant)
        stored = await conversations.append(sid, chats, agent_id=agent, metadata=metas)
        info = await self._conversation_info(conversations, agent, sid)
        return ConversationPage(
            conversation_id=info.conversation_id,
            session_id=sid,
            agent_id=agent,
            view="agent",
            total=info.message_count,
            messages=tuple(stored),
        )

    async def conversation_messages(
        self,
        actor: Actor,
        session_id: str,
        *,
        agent_id: str,
        view: str = "agent",
        limit: int = 100,
        offset: int = 0,
    ) -> ConversationPage:
        """A page of the session's messages as ``view`` reads them, oldest first.

        Agent actors read the ``agent`` view only (never a message with
        ``agent_visible=False``); ``user`` is for human and admin actors, ``all`` (every row,
        retracted ones included) for admins.

        Raises:
            MemoryNotFoundError: the agent has no conversation ``session_id``.
            MemoryPermissionError: the view is not the actor's to read.
        """
        agent = self._agent(actor, Scope.READ, agent_id)
        sid = check_session_id(session_id)
        seen = self._visible(actor, view)
        _check_page(limit, offset)
        conversations = await self._conversations_of(actor.tenant)
        info = await self._conversation_info(conversations, agent, sid)
        found = await conversations.messages(sid, agent_id=agent, view=seen)
        return ConversationPage(
            conversation_id=info.conversation_id,
            session_id=sid,
            agent_id=agent,
            view=seen,
            total=len(found),
            offset=offset,
            messages=tuple(found[offset : offset + limit]),
        )

    async def conversations(
        self,
        actor: Actor,
        *,
        agent_id: str,
        limit: int = 20,
        offset: int = 0,
        include_archived: bool = False,
    ) -> builtins.list[ConversationInfo]:
        """A page of the agent's conversations, latest append first."""
        agent = self._agent(actor, Scope.READ, agent_id)
        _check_page(limit, offset)
        conversations = await self._conversations_of(actor.tenant)
        found = await conversations.conversations(
            agent_id=agent, limit=offset + limit, include_archived=include_archived
        )
        return found[offset:]

    async def conversation_context(
        self, actor: Actor, session_id: str, *, agent_id: str, include_messages: bool = True
    ) -> ContextWindow:
        """The session's context window: pressure, compaction state and the agent view."""
        agent = self._agent(actor, Scope.READ, agent_id)
        sid = check_session_id(session_id)
        conversations = await self._conversations_of(actor.tenant)
        return await conversations.window(sid, agent_id=agent, include_messages=include_messages)

    async def conversation_compact(
        self, actor: Actor, session_id: str, *, agent_id: str, summariser: str = "llm"
    ) -> CompactionReport:
        """Relieve the session's context pressure now (soft: mark pairs; hard: summarise).

        ``summariser="llm"`` needs the server's LLM (``MemoryService(llm=...)``, the memory's,
        or ``MEMVAULT_LLM_BASE_URL``); ``"extractive"`` uses the deterministic extractor.

        Raises:
            MemoryValidationError: ``llm`` asked for and the server has no LLM, or an unknown
                summariser.
            MemoryNotFoundError: the agent has no conversation ``session_id``.
        """
        agent = self._agent(actor, Scope.WRITE, agent_id)
        sid = check_session_id(session_id)
        if summariser not in ("llm", "extractive"):
            msg = f"summariser must be 'llm' or 'extractive', got {summariser!r}"
            raise MemoryValidationError(msg)
        conversations = await self._conversations_of(actor.tenant)
        if summariser == "llm" and conversations.llm is None:
            msg = (
                "compaction with summariser 'llm' needs an LLM and this server has none "
                f"(set {LLM_URL_ENV}, or ask for summariser 'extractive')"
            )
            raise MemoryValidationError(msg)
        await self._conversation_info(conversations, agent, sid)
        return await conversations.compact(
            sid, agent_id=agent, extractive=summariser == "extractive"
        )

    async def conversation_status(self, actor: Actor) -> ConversationStatus:
        """The tenant's conversation counts and embedding queue (not for agent actors)."""
        self._check(actor, Scope.READ, None)
        conversations = await self._conversations_of(actor.tenant)
        return await conversations.status()

    async def conversation_backfill(self, actor: Actor) -> tuple[int, int]:
        """Embed every stored message without a vector now (admin).

        Returns how many were embedded and how many still have none (0 unless the store has
        no embedder or rows arrived meanwhile).
        """
        self._check(actor, Scope.ADMIN, None)
        conversations = await self._conversations_of(actor.tenant)
        embedded = await conversations.backfill()
        return embedded, await conversations.store.count_unembedded()

    # -- learning -------------------------------------------------------------------------------

    @staticmethod
    def _human(actor: Actor, what: str) -> None:
        """Refuse agent actors: ``what`` is for humans and admins only."""
        if actor.kind is ActorKind.AGENT:
            msg = f"{actor.label} may not {what}: only human and admin callers may"
            raise MemoryPermissionError(msg)

    async def learn_from(
        self, actor: Actor, outcome: TaskOutcome | Mapping[str, Any], *, agent_id: str
    ) -> LearnReport:
        """Learn from one finished task of the agent (see :meth:`AsyncMemory.learn_from`)."""
        agent = self._agent(actor, Scope.WRITE, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.learn_from(outcome, agent_id=agent)

    async def set_profile(
        self,
        actor: Actor,
        *,
        agent_id: str,
        role: str | None = None,
        department: str | None = None,
        seniority: Seniority | str = Seniority.MID,
    ) -> AgentProfile:
        """Set an agent's role, department and seniority (humans and admins only)."""
        self._check(actor, Scope.WRITE, None)
        memory = await self.memory(actor.tenant)
        return await memory.set_profile(
            agent_id, role=role, department=department, seniority=seniority
        )

    async def profile(self, actor: Actor, *, agent_id: str) -> AgentProfile:
        """One agent's profile (a default one when none was set)."""
        agent = self._agent(actor, Scope.READ, agent_id)
        memory = await self.memory(actor.tenant)
        return await memory.learning.get_profile(agent)

    async def profiles(self, actor: Actor) -> builtins.list[AgentProfile]:
        """Every agent profile of the tenant (not for agent actors)."""
        self._check(actor, Scope.READ, None)
        memory = await self.memory(actor.tenant)
        return await memory.learning.profiles.list()

    async def approvals(
        self, actor: Actor, *, status: ApprovalStatus | str | None = None, limit: int = 100
    ) -> builtins.list[ApprovalItem]:
        """The approval queue, newest first (read-only for every caller)."""
        if not actor.allows(Scope.READ):
            msg = f"{actor.label} lacks the 'read' scope"
            raise MemoryPermissionError(msg)
        memory = await self.memory(actor.tenant)
        return await memory.learning.approvals(status=status, limit=limit)

    async def approval(self, actor: Actor, item_id: str) -> ApprovalItem:
        """One approval item."""
        if not actor.allows(Scope.READ):
            msg = f"{actor.label} lacks the 'read' scope"
            raise MemoryPermissionError(msg)
        memory = await self.memory(actor.tenant)
        return await memory.learning.approval(item_id)

    async def approve(
        self, actor: Actor, item_id: str, *, reason: str | None = None
    ) -> ApprovalItem:
        """Approve a queued proposal and apply it; human and admin actors only (audited)."""
        self._human(actor, "approve proposals")
        self._check(actor, Scope.WRITE, None)
        why = check_reason(reason)
        memory = await self.memory(actor.tenant)
        return await memory.learning.approve(item_id, actor=actor.label, reason=why)

    async def reject(
        self, actor: Actor, item_id: str, *, reason: str | None = None
    ) -> ApprovalItem:
        """Reject a queued proposal (kept for the record); human and admin actors only."""
        self._human(actor, "reject proposals")
        self._check(actor, Scope.WRITE, None)
        why = check_reason(reason, required=True)
        assert why is not None  # required=True never returns None
        memory = await self.memory(actor.tenant)
        return await memory.learning.reject(item_id, actor=actor.label, reason=why)

    async def evolve(self, actor: Actor, *, force: bool = True) -> EvolverReport:
        """Run one skill-evolver cycle for the tenant (admin)."""
        self._check(actor, Scope.ADMIN, None)
        memory = await self.memory(actor.tenant)
        return await memory.evolve(force=force)

    async def prune_procedural(self, actor: Actor, *, agent_id: str) -> PruneReport:
        """Prune the agent's procedural lessons into the archive (admin)."""
        agent = self._agent(actor, Scope.ADMIN, agent_id)
        memory = await self.memory(actor.tenant)
        with acting_as(actor.label):
            return await memory.prune_procedural(agent_id=agent)

    async def org_policies(self, actor: Actor) -> builtins.list[OrgFact]:
        """The organisation's core policies."""
        if not actor.allows(Scope.READ):
            msg = f"{actor.label} lacks the 'read' scope"
            raise MemoryPermissionError(msg)
        memory = await self.memory(actor.tenant)
        return builtins.list(await memory.learning.org.list_policies())

    async def org_search(
        self,
        actor: Actor,
        query: str,
        *,
        kinds: Sequence[OrgFactKind] | None = None,
        limit: int | None = None,
    ) -> builtins.list[OrgFact]:
        """Search the organisation's extended knowledge."""
        if not actor.allows(Scope.READ):
            msg = f"{actor.label} lacks the 'read' scope"
            raise MemoryPermissionError(msg)
        try:
            q = OrgMemoryQuery(text=query, kinds=None if not kinds else tuple(kinds), limit=limit)
        except ValidationError as exc:
            raise model_error(exc) from None
        memory = await self.memory(actor.tenant)
        return builtins.list(await memory.learning.org.query(q))

    async def org_write(
        self,
        actor: Actor,
        *,
        kind: OrgFactKind | str,
        content: str,
        tags: Sequence[str] = (),
        supersedes: str | None = None,
        agent_id: str | None = None,
    ) -> str:
        """Append an org fact; write access by kind (policies: humans; ADRs: senior+)."""
        memory = await self.memory(actor.tenant)
        if actor.kind is ActorKind.AGENT or agent_id is not None:
            agent = self._agent(actor, Scope.WRITE, agent_id or actor.name)
            profile = await memory.learning.get_profile(agent)
            author = OrgFactAuthor(kind="agent", name=agent, seniority=profile.seniority)
        else:
            self._check(actor, Scope.WRITE, None)
            author = OrgFactAuthor(kind="human", name=actor.name)
        try:
            request = OrgFactWriteRequest(
                kind=OrgFactKind(kind), content=content, tags=tuple(tags), supersedes=supersedes
            )
        except ValidationError as exc:
            raise model_error(exc) from None
        except ValueError:
            names = ", ".join(k.value for k in OrgFactKind)
            msg = f"unknown org fact kind {kind!r} (choose from {names})"
            raise MemoryValidationError(msg) from None
        return await memory.learning.org.write(request, author=author)

    async def skills(
        self, actor: Actor, *, include_superseded: bool = False
    ) -> builtins.list[PooledSkill]:
        """The org skill pool with application counts."""
        if not actor.allows(Scope.READ):
            msg = f"{actor.label} lacks the 'read' scope"
            raise MemoryPermissionError(msg)
        memory = await self.memory(actor.tenant)
        return await memory.learning.skills(include_superseded=include_superseded)

    # -- embedder fine-tuning (admin) --------------------------------------------------------------

    async def _fine_tuner(self, actor: Actor) -> FineTuneManager:
        """The tenant's fine-tune manager, after checking the actor is an admin.

        The default tenant uses ``fine_tune.checkpoint_path`` itself (the registry the configured
        embedder follows); another tenant its own registry under ``tenants/<name>`` there, so
        tenants never see or roll back each other's runs.

        Raises:
            MemoryPermissionError: the actor lacks the admin scope.
            MemoryCapabilityError: fine-tuning is disabled or has no checkpoint registry.
        """
        self._check(actor, Scope.ADMIN, None)
        settings = self._config.fine_tune
        if not settings.enabled or settings.checkpoint_path is None:
            msg = (
                "embedder fine-tuning is disabled on this server "
                "(set memory.fine_tune.enabled, checkpoint_path and base_model)"
            )
            raise MemoryCapabilityError(msg)
        tenant = check_tenant(actor.tenant)
        found = self._fine_tuners.get(tenant)
        if found is not None:
            return found
        root = Path(settings.checkpoint_path).expanduser()
        registry = root if tenant == DEFAULT_TENANT else root / "tenants" / tenant

        async def passages() -> builtins.list[tuple[str, str]]:
            # The tenant's own memories join the documents as passages to fine-tune on.
            memory = await self.memory(tenant)
            return [
                (str(row["id"]), str(row["content"]))
                for row in await memory.export()
                if row.get("content")
            ]

        manager = FineTuneManager(
            settings,
            registry=registry,
            llm=self._llm,
            passage_source=passages,
            actor=actor.label,
        )
        return self._fine_tuners.setdefault(tenant, manager)

    async def start_fine_tune(self, actor: Actor, plan: FineTunePlan) -> FineTuneRun:
        """Start a fine-tune run of ``plan`` and return it at once (poll the status).

        Raises:
            MemoryConflictError: a run is still going.
            MemoryValidationError: the plan fails preflight (the message lists why).
            FineTuneDependencyError: the plan's trainer needs ML packages that are missing.
        """
        manager = await self._fine_tuner(actor)
        return await manager.start(plan, actor=actor.label)

    async def resume_fine_tune(self, actor: Actor, run_id: str) -> FineTuneRun:
        """Resume a failed or cancelled run from its first unfinished stage (returns at once)."""
        manager = await self._fine_tuner(actor)
        return await manager.resume(run_id, actor=actor.label)

    async def get_fine_tune_status(self, actor: Actor, run_id: str | None = None) -> FineTuneStatus:
        """A run's status: ``run_id``'s, else the active run's, else the latest run's."""
        manager = await self._fine_tuner(actor)
        return await manager.status(run_id)

    async def cancel_fine_tune(
        self, actor: Actor, *, confirm: bool = False, reason: str | None = None
    ) -> str | None:
        """Cancel the active run (destructive: ``confirm=True`` and a reason; audited).

        Returns the cancelled run's id, or None when no run was active.
        """
        manager = await self._fine_tuner(actor)
        return await manager.cancel(actor=actor.label, confirm=confirm, reason=reason)

    async def run_fine_tune_preflight(self, actor: Actor, plan: FineTunePlan) -> PreflightResult:
        """Check a plan against this server's environment without starting anything."""
        manager = await self._fine_tuner(actor)
        return await manager.preflight(plan)

    async def list_fine_tune_runs(
        self, actor: Actor, *, limit: int = 20, offset: int = 0
    ) -> tuple[tuple[FineTuneRun, ...], int]:
        """A page of runs, newest first, and the total number of runs."""
        manager = await self._fine_tuner(actor)
        return await manager.list_runs(limit=limit, offset=offset)

    async def list_fine_tune_checkpoints(self, actor: Actor) -> tuple[CheckpointRecord, ...]:
        """Every checkpoint of the tenant's registry, newest first (the active one marked)."""
        manager = await self._fine_tuner(actor)
        return await manager.list_checkpoints()

    async def get_active_embedder(self, actor: Actor) -> ActiveEmbedderSnapshot:
        """Which embedder the tenant's registry serves now (the base model until a deploy)."""
        manager = await self._fine_tuner(actor)
        return await manager.get_active_embedder()

    async def rollback_checkpoint(
        self,
        actor: Actor,
        checkpoint_id: str,
        *,
        confirm: bool = False,
        reason: str | None = None,
    ) -> CheckpointRecord:
        """Make ``checkpoint_id`` (``"base"``: the base model) the active embedder again.

        Destructive: needs ``confirm=True`` and a non-blank reason, and is audited under the
        actor (the registry's ``audit.jsonl``). The store's embeddings were made by the previous
        model, so ``memvault reindex`` follows a rollback, as it follows a deploy.

        Raises:
            MemoryValidationError: no confirmation or no reason.
            MemoryNotFoundError: no such checkpoint.
        """
        manager = await self._fine_tuner(actor)
        return await manager.rollback_checkpoint(
            checkpoint_id, actor=actor.label, confirm=confirm, reason=reason
        )


def _check_page(limit: int, offset: int) -> None:
    """A page's ``limit`` (1-1000) and ``offset`` (0 or more), as the wire models say."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        msg = "limit must be an integer between 1 and 1000"
        raise MemoryValidationError(msg)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        msg = "offset must be a non-negative integer"
        raise MemoryValidationError(msg)
