"""``MemoryService``: the one entry point for the REST server, the MCP server and the CLI.

Interfaces never touch a store directly: they authenticate a caller, turn it into an
:class:`Actor`, and run an operation of the table (:mod:`memvault.api.operations`) with
:meth:`MemoryService.call`, which

* **authorises** by the operation's declared scope and policy (:mod:`memvault.api.policy`): an
  agent actor reaches only its own memories plus the shared (organisational) knowledge of its
  tenant; a human or admin actor reaches every agent of its tenant. Scopes gate the kind of
  operation (``read`` < ``write`` < ``admin``); whole-store operations (clear, import, export
  of every agent, audit, sweep, consolidate) need ``admin``.
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
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from memvault._actor import acting_as
from memvault.api import requests as rq
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
from memvault.api.operations import Host, Operation, get_operation
from memvault.api.policy import Audit, Call, check_scope
from memvault.api.requests import Request
from memvault.backends.factory import (
    check_tenant,
    create_memory_backend,
    keep_working_in_process,
    tenant_url,
    working_routed,
)
from memvault.config import COMPOSITE_URL, MemvaultConfig, load_config
from memvault.config.llm import DEFAULT_LLM_MODEL, LLM_MODEL_ENV, LLM_URL_ENV
from memvault.conversation.compaction import CompactionReport
from memvault.conversation.memory import ContextWindow, ConversationMemory, ConversationStatus
from memvault.conversation.models import (
    ConversationInfo,
    ConversationPage,
    MessageMetadata,
    MessageView,
)
from memvault.conversation.session_store import check_session_id
from memvault.errors import (
    LLMNotConfiguredError,
    MemoryCapabilityError,
    MemoryConfigError,
    MemoryConflictError,
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.finetune.config import (
    ActiveEmbedderSnapshot,
    CheckpointRecord,
    FineTuneRun,
    FineTuneStatus,
    PreflightResult,
)
from memvault.finetune.manager import FineTuneManager
from memvault.learning.factory import open_learning_store
from memvault.memory import AsyncMemory
from memvault.models import ChatMessage
from memvault.persistence import create_persistence
from memvault.protocols import Embedder, LLMProvider
from memvault.sessions import SessionRecord, SessionStore, open_session_store
from memvault.validation import model_error

DEFAULT_MAX_OPEN_TENANTS = 256
"""Tenants a service keeps open before it closes the least recently used idle ones."""
TENANT_IDLE_SECONDS = 120.0
"""A tenant unused for this long (and with no call in flight) may be closed to make room."""

__all__ = [
    "DEFAULT_LLM_MODEL",
    "DEFAULT_TENANT",
    "LLM_MODEL_ENV",
    "LLM_URL_ENV",
    "Actor",
    "ActorKind",
    "MemoryService",
    "Scope",
    "covers",
    "parse_scopes",
    "scope_rank",
]


def configured_llm(config: MemvaultConfig) -> LLMProvider | None:
    """The LLM ``config.llm`` (else ``MEMVAULT_LLM_BASE_URL``/``_MODEL``) names, or None."""
    found = config.llm.resolved()
    if found is None:
        return None
    from memvault.llm import OpenAICompatibleLLM

    url, model = found
    return OpenAICompatibleLLM(
        url, model, api_key_env=config.llm.api_key_env, timeout=config.llm.timeout
    )


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
        max_open_tenants: int = DEFAULT_MAX_OPEN_TENANTS,
    ) -> None:
        if max_open_tenants < 1:
            msg = f"max_open_tenants must be at least 1, got {max_open_tenants}"
            raise MemoryConfigError(msg)
        self._config = config if config is not None else load_config()
        self._embedder = embedder
        # The configured LLM (``llm:``, else MEMVAULT_LLM_*) when none is given: every tenant's
        # memory then proposes lessons, consolidates with llm/dual_mode, extracts facts and
        # compacts with it, in serve and maintain alike.
        self._llm = llm if llm is not None else configured_llm(self._config)
        self._env_llm: LLMProvider | None = None
        self._memories: dict[str, AsyncMemory] = {}
        # Open tenants: when each was last used, and the calls running on each. Past
        # max_open_tenants the least recently used idle ones are closed (their stores hold
        # connections); they open again on their next request.
        self._max_open = max_open_tenants
        self._last_used: dict[str, float] = {}
        self._in_flight: Counter[str] = Counter()
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
            self._last_used[name] = time.monotonic()
            return found
        if self._single_tenant:
            msg = f"tenant {name!r} does not exist on this server"
            raise MemoryPermissionError(msg)
        idle: builtins.list[str] = []
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
                    operations=create_persistence(
                        self._config, tenant=None if name == DEFAULT_TENANT else name
                    ),
                )
                self._memories[name] = found
                self._last_used[name] = time.monotonic()
                idle = self._idle_tenants()
        for other in idle:
            await self.close_tenant(other)
        return found

    def _idle_tenants(self) -> builtins.list[str]:
        """Tenants to close so that at most ``max_open_tenants`` stay open (idle ones only)."""
        excess = len(self._memories) - self._max_open
        if excess <= 0:
            return []
        oldest = time.monotonic() - TENANT_IDLE_SECONDS
        idle = sorted(
            (at, t)
            for t, at in self._last_used.items()
            if t != DEFAULT_TENANT
            and t in self._memories
            and at < oldest
            and not self._in_flight[t]
            and t not in self._fine_tuners
        )
        return [t for _, t in idle[:excess]]

    @property
    def open_tenants(self) -> builtins.list[str]:
        """The tenants whose stores are open now."""
        return sorted(self._memories)

    async def close_tenant(self, tenant: str) -> bool:
        """Close one tenant's stores (they open again on its next request); False if closed.

        Raises:
            MemoryConfigError: an invalid tenant name.
        """
        name = check_tenant(tenant)
        async with self._lock:
            memory = self._memories.pop(name, None)
            sessions = self._sessions.pop(name, None)
            conversation = self._conversations.pop(name, None)
            self._last_used.pop(name, None)
        if memory is None:
            return False
        if conversation is not None:
            await conversation.close()
        if sessions is not None:
            await sessions.close()
        await memory.close()
        return True

    async def drop_tenant(self, tenant: str) -> builtins.list[str]:
        """Delete a tenant and everything it stores; the storage removed.

        Its stores are closed first; then its PostgreSQL schema is dropped (``CASCADE``) or its
        SQLite files are deleted. The default tenant cannot be dropped, nor a tenant with a
        call in flight. Its API keys stay in the key store (revoke them: ``memvault keys``).

        Raises:
            MemoryPermissionError: the default tenant, or a single-memory service.
            MemoryConflictError: a call of the tenant is running.
            MemoryCapabilityError: a store kind without per-tenant storage to remove.
        """
        name = check_tenant(tenant)
        if name == DEFAULT_TENANT or self._single_tenant:
            msg = "the default tenant cannot be dropped"
            raise MemoryPermissionError(msg)
        if self._in_flight[name]:
            msg = f"tenant {name!r} has calls in flight; retry when they are done"
            raise MemoryConflictError(msg)
        await self.close_tenant(name)
        self._fine_tuners.pop(name, None)
        return await asyncio.to_thread(_drop_tenant_storage, self._config, name)

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

    # -- the operation table --------------------------------------------------------------------

    @property
    def llm(self) -> LLMProvider | None:
        """The LLM this service was given (consolidation uses it; None: none given)."""
        return self._llm

    async def call(
        self,
        actor: Actor,
        operation: Operation | str,
        request: Request | Mapping[str, Any],
        **local: Any,
    ) -> Any:
        """Run one declared operation (:mod:`memvault.api.operations`) for ``actor``.

        ``request`` is the operation's input model or plain data for it (validated by the
        model, so every interface has the same limits). The declared scope is checked first,
        then the declared policy (:mod:`memvault.api.policy`), which validates the agent id
        once; then the implementation runs on the tenant's memory, audited as the operation
        declares. REST, MCP, the dashboard and the CLI call every operation through here.

        ``local`` are extra keywords for an ``impl`` that only in-process callers can give
        (the CLI's progress callback, a file for an export to write); no interface passes any.

        Raises:
            MemoryValidationError: unknown operation or invalid input.
            MemoryPermissionError: the actor lacks the operation's scope, or its policy refuses
                the call (another agent's memories, tenant-wide for an agent key, ...).
        """
        op = get_operation(operation) if isinstance(operation, str) else operation
        check_scope(actor, op.scope)
        if not isinstance(request, op.request):
            try:
                request = op.parse(cast("Mapping[str, Any]", request))
            except ValidationError as exc:
                raise model_error(exc) from None
        agent = op.policy.authorise(actor, op.scope, getattr(request, "agent_id", None))
        call = Call(actor, agent)
        if op.impl is None:
            assert op.invoke is not None  # Operation requires one of the two
            invoke = op.invoke
            if getattr(Host, invoke.__name__, None) is invoke:
                # Host's method is the declaration (its body is "..."): run this service's own.
                invoke = getattr(type(self), invoke.__name__)
            why = getattr(request, "reason", None) if op.audit is Audit.REASON else None
            with self._running(actor.tenant), _audited(op.audit, actor, why):
                return await invoke(self, call, request)
        args = op.arguments(request)
        why = args.pop("reason", None) if op.audit is Audit.REASON else None
        if agent is not None and "agent_id" in args:
            args["agent_id"] = agent  # the id the policy validated
        memory = await self.memory(actor.tenant)
        # Looked up on the instance, so that a subclass's override runs (the remote client is
        # an AsyncMemory whose methods send requests): op.impl(memory) would bypass it.
        method = getattr(memory, op.impl.__name__)
        with self._running(actor.tenant), _audited(op.audit, actor, why):
            return await method(**args, **local)

    @contextmanager
    def _running(self, tenant: str) -> Iterator[None]:
        """Count a call of ``tenant`` as in flight: an open tenant is never closed under one."""
        self._in_flight[tenant] += 1
        try:
            yield
        finally:
            self._in_flight[tenant] -= 1
            if not self._in_flight[tenant]:
                del self._in_flight[tenant]

    def ask_llm(self) -> LLMProvider | None:
        """The LLM of Search-and-Ask and compaction summaries.

        The service's (``MemoryService(llm=...)``), else an OpenAI-compatible one named by
        ``MEMVAULT_LLM_BASE_URL`` and ``MEMVAULT_LLM_MODEL`` (the variables every LLM option
        of the CLI reads); None without either (Search-and-Ask then answers with its first
        search, and the memory's own LLM, if any, summarises).
        """
        if self._llm is not None:
            return self._llm
        if self._env_llm is None:
            # The environment may have changed since the service was built (tests, a CLI).
            self._env_llm = configured_llm(self._config)
        return self._env_llm

    # -- sessions -------------------------------------------------------------------------------

    async def save_session(self, call: Call, req: rq.SessionBody) -> SessionRecord:
        """Create or replace one session's message history (system messages are kept out)."""
        sid = check_session_id(req.session_id)
        store = await self._sessions_of(call.tenant)
        kept = [m for m in req.messages if m.role != "system"]
        return await store.save(call.agent_id, sid, kept)

    async def sessions(self, call: Call, req: rq.SessionsParams) -> builtins.list[SessionRecord]:
        """The agent's sessions, most recently saved first."""
        store = await self._sessions_of(call.tenant)
        return await store.list(call.agent_id, limit=req.limit)

    async def session(self, call: Call, req: rq.SessionParams) -> SessionRecord | None:
        """One session of the agent (``latest``: the most recent one), or None."""
        store = await self._sessions_of(call.tenant)
        if req.session_id == "latest":
            return await store.latest(call.agent_id)
        return await store.get(call.agent_id, check_session_id(req.session_id))

    async def delete_session(self, call: Call, req: rq.DeleteSessionParams) -> bool:
        """Delete one session of the agent; False if it has none with that id."""
        store = await self._sessions_of(call.tenant)
        return await store.delete(call.agent_id, check_session_id(req.session_id))

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
            llm=self.ask_llm() or memory.llm,
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
        self, call: Call, req: rq.ConversationAppendBody
    ) -> ConversationPage:
        """Append turns to the session's conversation (created on the first append).

        Each turn is a chat message with who may see it (``agent_visible``, ``user_visible``,
        ``focus_pinned``: seed 004's ``MessageMetadata``). Everything is stored in one
        transaction before this returns; with the embedding queue on, vectors follow in the
        background.
        """
        agent = call.agent_id
        sid = check_session_id(req.session_id)
        keys = {"agent_visible", "user_visible", "focus_pinned"}
        try:
            chats = [
                ChatMessage(**m.model_dump(exclude=keys, exclude_none=True)) for m in req.messages
            ]
            metas = [MessageMetadata(**m.model_dump(include=keys)) for m in req.messages]
        except ValidationError as exc:
            raise model_error(exc) from None
        conversations = await self._conversations_of(call.tenant)
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
        self, call: Call, req: rq.ConversationMessagesParams
    ) -> ConversationPage:
        """A page of the session's messages as ``req.view`` reads them, oldest first.

        Agent actors read the ``agent`` view only (never a message with
        ``agent_visible=False``); ``user`` is for human and admin actors, ``all`` (every row,
        retracted ones included) for admins.

        Raises:
            MemoryNotFoundError: the agent has no conversation ``session_id``.
            MemoryPermissionError: the view is not the actor's to read.
        """
        agent = call.agent_id
        sid = check_session_id(req.session_id)
        seen = self._visible(call.actor, req.view)
        conversations = await self._conversations_of(call.tenant)
        info = await self._conversation_info(conversations, agent, sid)
        found = await conversations.messages(sid, agent_id=agent, view=seen)
        return ConversationPage(
            conversation_id=info.conversation_id,
            session_id=sid,
            agent_id=agent,
            view=seen,
            total=len(found),
            offset=req.offset,
            messages=tuple(found[req.offset : req.offset + req.limit]),
        )

    async def conversations(
        self, call: Call, req: rq.ConversationsParams
    ) -> builtins.list[ConversationInfo]:
        """A page of the agent's conversations, latest append first."""
        conversations = await self._conversations_of(call.tenant)
        found = await conversations.conversations(
            agent_id=call.agent_id,
            limit=req.offset + req.limit,
            include_archived=req.include_archived,
        )
        return found[req.offset :]

    async def conversation_context(
        self, call: Call, req: rq.ConversationContextParams
    ) -> ContextWindow:
        """The session's context window: pressure, compaction state and the agent view."""
        sid = check_session_id(req.session_id)
        conversations = await self._conversations_of(call.tenant)
        return await conversations.window(
            sid, agent_id=call.agent_id, include_messages=req.include_messages
        )

    async def conversation_compact(self, call: Call, req: rq.CompactBody) -> CompactionReport:
        """Relieve the session's context pressure now (soft: mark pairs; hard: summarise).

        ``summariser="llm"`` needs the server's LLM (``MemoryService(llm=...)``, the memory's,
        or ``MEMVAULT_LLM_BASE_URL``); ``"extractive"`` uses the deterministic extractor.

        Raises:
            LLMNotConfiguredError: ``llm`` asked for and the server has no LLM.
            MemoryNotFoundError: the agent has no conversation ``session_id``.
        """
        agent = call.agent_id
        sid = check_session_id(req.session_id)
        conversations = await self._conversations_of(call.tenant)
        if req.summariser == "llm" and conversations.llm is None:
            msg = (
                "compaction with summariser 'llm' needs an LLM and this server has none "
                f"(set llm.base_url or {LLM_URL_ENV}, or ask for summariser 'extractive')"
            )
            raise LLMNotConfiguredError(msg)
        await self._conversation_info(conversations, agent, sid)
        return await conversations.compact(
            sid, agent_id=agent, extractive=req.summariser == "extractive"
        )

    async def conversation_status(
        self, call: Call, _req: rq.ConversationStatusParams
    ) -> ConversationStatus:
        """The tenant's conversation counts and embedding queue (not for agent actors)."""
        conversations = await self._conversations_of(call.tenant)
        return await conversations.status()

    async def conversation_backfill(
        self, call: Call, _req: rq.ConversationBackfillBody
    ) -> tuple[int, int]:
        """Embed every stored message without a vector now (admin).

        Returns how many were embedded and how many still have none (0 unless the store has
        no embedder or rows arrived meanwhile).
        """
        conversations = await self._conversations_of(call.tenant)
        embedded = await conversations.backfill()
        return embedded, await conversations.store.count_unembedded()

    # -- embedder fine-tuning (admin) --------------------------------------------------------------

    async def _fine_tuner(self, actor: Actor) -> FineTuneManager:
        """The tenant's fine-tune manager (the caller is an authorised admin).

        The default tenant uses ``fine_tune.checkpoint_path`` itself (the registry the configured
        embedder follows); another tenant its own registry under ``tenants/<name>`` there, so
        tenants never see or roll back each other's runs.

        Raises:
            MemoryCapabilityError: fine-tuning is disabled or has no checkpoint registry.
        """
        # The operations' policy (tenant-wide, admin scope) authorised the actor already.
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

    async def fine_tune_start(self, call: Call, req: rq.FineTuneBody) -> FineTuneRun:
        """Start a fine-tune run of the plan and return it at once (poll the status).

        Raises:
            MemoryConflictError: a run is still going.
            MemoryValidationError: the plan fails preflight (the message lists why).
            FineTuneDependencyError: the plan's trainer needs ML packages that are missing.
        """
        manager = await self._fine_tuner(call.actor)
        return await manager.start(req.plan(), actor=call.actor.label)

    async def fine_tune_resume(self, call: Call, req: rq.FineTuneResumeParams) -> FineTuneRun:
        """Resume a failed or cancelled run from its first unfinished stage (returns at once)."""
        manager = await self._fine_tuner(call.actor)
        return await manager.resume(req.run_id, actor=call.actor.label)

    async def fine_tune_status(self, call: Call, req: rq.FineTuneStatusParams) -> FineTuneStatus:
        """A run's status: ``run_id``'s, else the active run's, else the latest run's."""
        manager = await self._fine_tuner(call.actor)
        return await manager.status(req.run_id)

    async def fine_tune_cancel(self, call: Call, req: rq.FineTuneCancelBody) -> str | None:
        """Cancel the active run (destructive: ``confirm`` and a reason; audited).

        Returns the cancelled run's id, or None when no run was active.
        """
        manager = await self._fine_tuner(call.actor)
        return await manager.cancel(actor=call.actor.label, confirm=req.confirm, reason=req.reason)

    async def fine_tune_preflight(self, call: Call, req: rq.FineTuneBody) -> PreflightResult:
        """Check a plan against this server's environment without starting anything."""
        manager = await self._fine_tuner(call.actor)
        return await manager.preflight(req.plan())

    async def fine_tune_runs(
        self, call: Call, req: rq.FineTuneRunsParams
    ) -> tuple[tuple[FineTuneRun, ...], int]:
        """A page of runs, newest first, and the total number of runs."""
        manager = await self._fine_tuner(call.actor)
        return await manager.list_runs(limit=req.limit, offset=req.offset)

    async def fine_tune_checkpoints(
        self, call: Call, _req: rq.NoParams
    ) -> tuple[CheckpointRecord, ...]:
        """Every checkpoint of the tenant's registry, newest first (the active one marked)."""
        manager = await self._fine_tuner(call.actor)
        return await manager.list_checkpoints()

    async def active_embedder(self, call: Call, _req: rq.NoParams) -> ActiveEmbedderSnapshot:
        """Which embedder the tenant's registry serves now (the base model until a deploy)."""
        manager = await self._fine_tuner(call.actor)
        return await manager.get_active_embedder()

    async def checkpoint_rollback(
        self, call: Call, req: rq.CheckpointRollbackBody
    ) -> CheckpointRecord:
        """Make ``checkpoint_id`` (``"base"``: the base model) the active embedder again.

        Destructive: needs ``confirm`` and a non-blank reason, and is audited under the actor
        (the registry's ``audit.jsonl``). The store's embeddings were made by the previous
        model, so ``memvault reindex`` follows a rollback, as it follows a deploy.

        Raises:
            MemoryValidationError: no confirmation or no reason.
            MemoryNotFoundError: no such checkpoint.
        """
        manager = await self._fine_tuner(call.actor)
        return await manager.rollback_checkpoint(
            req.checkpoint_id, actor=call.actor.label, confirm=req.confirm, reason=req.reason
        )


@contextmanager
def _audited(audit: Audit, actor: Actor, reason: str | None) -> Iterator[None]:
    """The audit context an operation declares (``none``: the implementation's own)."""
    if audit is Audit.NONE:
        yield
        return
    why = check_reason(reason) if audit is Audit.REASON else None
    with acting_as(actor.label, why):
        yield


def _drop_tenant_storage(config: MemvaultConfig, tenant: str) -> list[str]:
    """Remove every store a tenant has: its PostgreSQL schemas or SQLite files; what went.

    The tenant's memory store and, where the operational records live elsewhere, theirs. The
    stores must be closed first (:meth:`memvault.service.MemoryService.drop_tenant`).

    Raises:
        MemoryConfigError: the default tenant's name or an invalid one.
        MemoryCapabilityError: a store kind without per-tenant storage (composite, Qdrant...).
    """
    from memvault.backends.factory import parse_url
    from memvault.persistence.factory import persistence_url

    name = check_tenant(tenant)
    url = config.resolved_url()
    kind = parse_url(url)[0]
    if kind not in ("sqlite", "postgresql", "memory"):
        msg = f"dropping a tenant of a {kind} store is not supported; remove its data by hand"
        raise MemoryCapabilityError(msg)
    targets = [tenant_url(url, name)]
    ops = persistence_url(config, tenant=name)
    if ops not in targets and parse_url(ops)[0] in ("sqlite", "postgresql"):
        targets.append(ops)
    removed: list[str] = []
    for target in targets:
        kind, where = parse_url(target)
        if kind == "postgresql":
            removed.extend(_drop_schema(where))
        elif kind == "sqlite":
            base = Path(where).expanduser()
            for path in (base, *(base.with_name(base.name + s) for s in ("-wal", "-shm"))):
                if path.exists():
                    path.unlink()
                    removed.append(str(path))
    return removed


def _drop_schema(url: str) -> list[str]:
    from memvault.backends.postgres._driver import psycopg, sql
    from memvault.backends.postgres._dsn import parse_dsn

    dsn = parse_dsn(url)
    if dsn.schema is None or dsn.schema == "public":
        msg = "refusing to drop the public schema"
        raise MemoryConfigError(msg)
    with psycopg.connect(dsn.conninfo, autocommit=True, connect_timeout=10) as conn:
        found = conn.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", [dsn.schema]
        ).fetchone()
        if found is None:
            return []
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(dsn.schema)))
    return [f"{dsn.location} schema {dsn.schema}"]
