"""Every public operation of memvault, declared once.

An :class:`Operation` names the operation, its input model (:mod:`memvault.api.requests`), the
scope it needs, one line of documentation, and how its result becomes JSON. The interfaces are
driven by this table instead of restating each operation:

* the REST app (:mod:`memvault.server.rest`) builds one route per operation with an
  :class:`Http` entry, grouped into one router per resource (``tag``);
* the MCP server (:mod:`memvault.server.mcp`) offers a tool per operation with a :class:`Tool`
  entry, its JSON schema derived from the input model;
* the CLI's ``memvault api`` group (:mod:`memvault.cli.api`) has a command per operation, its
  options derived from the input model;
* the remote client (:mod:`memvault.remote`) sends each call to the operation's method and path.

:meth:`memvault.service.MemoryService.call` runs an operation for an actor: it checks the
declared scope and policy (:mod:`memvault.api.policy`) once, then calls the implementation: an
:class:`~memvault.memory.AsyncMemory` method (``impl``) with the request's fields, or a typed
function (``invoke``) for an operation with logic of its own. Adding an operation is one entry
here plus its implementation.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from memvault.api import records as rec
from memvault.api import requests as rq
from memvault.api import responses as rs
from memvault.api.auth import Scope, check_reason
from memvault.api.policy import (
    AGENT,
    AGENT_OR_ADMIN_TENANT,
    AGENT_OR_TENANT,
    ANY,
    SELF,
    TENANT,
    Audit,
    Call,
    Policy,
    humans_only,
)
from memvault.consolidation import ConsolidationResult
from memvault.conversation.compaction import CompactionReport
from memvault.conversation.memory import ContextWindow, ConversationStatus
from memvault.conversation.models import ConversationInfo, ConversationPage
from memvault.errors import MemoryNotFoundError, MemoryValidationError
from memvault.finetune.config import (
    ActiveEmbedderSnapshot,
    CheckpointRecord,
    FineTuneRun,
    FineTuneStatus,
    PreflightResult,
)
from memvault.learning.models import (
    AgentProfile,
    ApprovalItem,
    EvolverReport,
    LearnReport,
    OrgFact,
    OrgFactAuthor,
    OrgFactWriteRequest,
    OrgMemoryQuery,
    PruneReport,
)
from memvault.memory import AsyncMemory
from memvault.models import MemoryEntry, StoreStats
from memvault.persistence import models as pm
from memvault.validation import model_error

if TYPE_CHECKING:
    from memvault.learning.engine import PooledSkill
    from memvault.protocols import LLMProvider
    from memvault.sessions import SessionRecord

__all__ = [
    "OPERATIONS",
    "Host",
    "Http",
    "Impl",
    "Invoke",
    "Operation",
    "Tool",
    "get_operation",
    "operation_table",
    "session_json",
]

Render = Callable[[Any, Any], Any]
"""``render(result, request) -> JSON``: what every interface sends back."""

Impl = Callable[..., Awaitable[Any]]
"""An :class:`AsyncMemory` method: ``impl(memory, **op.arguments(request))``."""

Invoke = Callable[["Host", Call, Any], Awaitable[Any]]
"""``invoke(service, call, request)``: an implementation with logic of its own."""


class Host(Protocol):
    """What the service (:class:`memvault.service.MemoryService`) offers implementations.

    The operations whose logic lives in the service (sessions, conversations, fine-tuning) name
    its methods here (``invoke=Host.save_session``), so the table stays below the service while
    mypy checks each method against the declaration and go-to-definition finds it.
    """

    @property
    def llm(self) -> LLMProvider | None:
        """The LLM the service was given (consolidation)."""
        ...

    def ask_llm(self) -> LLMProvider | None:
        """The LLM Search-and-Ask and compaction use (given, else from the environment)."""
        ...

    async def memory(self, tenant: str = ...) -> AsyncMemory:
        """The tenant's memory, opened on first use."""
        ...

    async def sessions(self, call: Call, req: rq.SessionsParams) -> list[SessionRecord]:
        """The agent's sessions, most recently saved first."""
        ...

    async def session(self, call: Call, req: rq.SessionParams) -> SessionRecord | None:
        """One session of the agent (``latest``: the most recent), or None."""
        ...

    async def save_session(self, call: Call, req: rq.SessionBody) -> SessionRecord:
        """Create or replace one session's message history."""
        ...

    async def delete_session(self, call: Call, req: rq.DeleteSessionParams) -> bool:
        """Delete one session of the agent; False if it has none with that id."""
        ...

    async def conversation_append(
        self, call: Call, req: rq.ConversationAppendBody
    ) -> ConversationPage:
        """Append turns to the session's conversation."""
        ...

    async def conversation_messages(
        self, call: Call, req: rq.ConversationMessagesParams
    ) -> ConversationPage:
        """A page of the session's messages as the view (the actor may read) reads them."""
        ...

    async def conversations(
        self, call: Call, req: rq.ConversationsParams
    ) -> list[ConversationInfo]:
        """A page of the agent's conversations, latest append first."""
        ...

    async def conversation_context(
        self, call: Call, req: rq.ConversationContextParams
    ) -> ContextWindow:
        """The session's context window."""
        ...

    async def conversation_compact(self, call: Call, req: rq.CompactBody) -> CompactionReport:
        """Relieve the session's context pressure now."""
        ...

    async def conversation_status(
        self, call: Call, req: rq.ConversationStatusParams
    ) -> ConversationStatus:
        """The tenant's conversation counts and embedding queue."""
        ...

    async def conversation_backfill(
        self, call: Call, req: rq.ConversationBackfillBody
    ) -> tuple[int, int]:
        """Embed every stored message without a vector now: (embedded, still without)."""
        ...

    async def fine_tune_start(self, call: Call, req: rq.FineTuneBody) -> FineTuneRun:
        """Start a fine-tune run and return it at once."""
        ...

    async def fine_tune_preflight(self, call: Call, req: rq.FineTuneBody) -> PreflightResult:
        """Check a plan against the server without starting anything."""
        ...

    async def fine_tune_resume(self, call: Call, req: rq.FineTuneResumeParams) -> FineTuneRun:
        """Resume a failed or cancelled run."""
        ...

    async def fine_tune_status(self, call: Call, req: rq.FineTuneStatusParams) -> FineTuneStatus:
        """A run's status (default: the active run, else the latest)."""
        ...

    async def fine_tune_runs(
        self, call: Call, req: rq.FineTuneRunsParams
    ) -> tuple[tuple[FineTuneRun, ...], int]:
        """A page of runs, newest first, and the total."""
        ...

    async def fine_tune_cancel(self, call: Call, req: rq.FineTuneCancelBody) -> str | None:
        """Cancel the active run; its id, or None when none was active."""
        ...

    async def fine_tune_checkpoints(
        self, call: Call, req: rq.NoParams
    ) -> tuple[CheckpointRecord, ...]:
        """Every checkpoint of the tenant's registry, newest first."""
        ...

    async def active_embedder(self, call: Call, req: rq.NoParams) -> ActiveEmbedderSnapshot:
        """Which embedder the tenant's registry serves now."""
        ...

    async def checkpoint_rollback(
        self, call: Call, req: rq.CheckpointRollbackBody
    ) -> CheckpointRecord:
        """Make a checkpoint (``base``: the base model) the active embedder again."""
        ...


@dataclass(frozen=True, slots=True)
class Http:
    """Where an operation lives in the REST API.

    Path parameters (``{memory_id}``) are fields of the input model. A ``GET``/``DELETE`` route
    takes the other fields as query parameters; ``POST``/``PUT`` takes them as a JSON body,
    whose OpenAPI name is ``body`` when the path has parameters. ``name`` is the route's name
    (and OpenAPI operation id) when it differs from the operation's.
    """

    method: str
    path: str
    tag: str
    status: int = 200
    response: type[BaseModel] | None = None
    body: str | None = None
    name: str | None = None

    @property
    def path_params(self) -> tuple[str, ...]:
        """The names in braces in ``path``, in order."""
        return tuple(re.findall(r"{(\w+)}", self.path))

    @property
    def has_body(self) -> bool:
        """True if the other fields travel as a JSON body (POST, PUT, PATCH)."""
        return self.method in {"POST", "PUT", "PATCH"}


@dataclass(frozen=True, slots=True)
class Tool:
    """An operation offered as an MCP tool.

    ``fields`` limits the tool to some of the input's fields (small schemas suit models);
    ``limits`` tightens a property's JSON schema for tool callers (e.g. ``maximum``). An
    ``agent_id`` field is optional for agent callers (it defaults to the caller). ``confirm``
    makes the tool destructive: ``confirm: true`` and a reason are required.
    """

    name: str
    title: str
    description: str
    fields: tuple[str, ...] | None = None
    limits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    read_only: bool = False
    confirm: bool = False
    render: Render | None = None
    output_schema: Mapping[str, Any] | None = None


def _fields(request: BaseModel) -> dict[str, Any]:
    # Shallow on purpose: nested models (ChatMessage, AddManyItem) reach the service as models.
    return {name: getattr(request, name) for name in type(request).model_fields}


@dataclass(frozen=True, slots=True)
class Operation:
    """One public operation: its name, input, scope, policy, implementation and interfaces.

    ``policy`` (:mod:`memvault.api.policy`; default :data:`~memvault.api.policy.AGENT`) says
    whose memories the call reaches, ``audit`` how its audit records name the caller. The
    implementation is ``impl``, an :class:`AsyncMemory` method called with the keywords
    ``arguments(request)`` gives (their ``agent_id`` the validated one), or ``invoke``, a typed
    function ``invoke(service, call, request)`` for operations with logic of their own.
    """

    name: str
    request: type[rq.Request]
    scope: Scope
    doc: str
    render: Render
    http: Http | None = None
    tool: Tool | None = None
    cli: bool = True
    arguments: Callable[[Any], dict[str, Any]] = _fields
    impl: Impl | None = None
    invoke: Invoke | None = None
    policy: Policy = AGENT
    audit: Audit = Audit.NONE

    def __post_init__(self) -> None:
        if (self.impl is None) == (self.invoke is None):
            msg = f"operation {self.name!r} needs exactly one of impl and invoke"
            raise MemoryValidationError(msg)
        # The service calls impl by name on the tenant's memory (so overrides run): it must be
        # the AsyncMemory method of that name.
        if (
            self.impl is not None
            and getattr(AsyncMemory, self.impl.__name__, None) is not self.impl
        ):
            msg = f"operation {self.name!r}: impl must be a method of AsyncMemory"
            raise MemoryValidationError(msg)

    @property
    def kind(self) -> str:
        """``read`` for operations that change nothing, else ``write`` (for retries, errors)."""
        reads = self.scope is Scope.READ or (self.http is not None and self.http.method == "GET")
        return "read" if reads else "write"

    def parse(self, data: Mapping[str, Any]) -> Any:
        """The input model from plain data (raises pydantic's ``ValidationError``)."""
        return self.request.model_validate(dict(data))


# -- JSON renderings --------------------------------------------------------------------------


def _entries(key: str) -> Render:
    return lambda found, _req: {key: [e.to_json() for e in found]}


def _entry(entry: MemoryEntry, _req: Any) -> dict[str, Any]:
    return entry.to_json()


def _field(key: str) -> Render:
    return lambda value, _req: {key: value}


def _dump(value: BaseModel, _req: Any) -> Any:
    return value.model_dump(mode="json")


def _dumps(key: str) -> Render:
    return lambda rows, _req: {key: [r.model_dump(mode="json") for r in rows]}


def _stored(outcome: Any, _req: Any) -> dict[str, Any]:
    decision = outcome.decision
    return {
        "id": outcome.id,
        "decision": decision.kind.value,
        "reason": decision.reason,
        "detail": decision.model_dump(mode="json"),
        "warnings": list(getattr(outcome, "warnings", ())),
    }


def _captured(memory_id: str | None, _req: Any) -> dict[str, Any]:
    return {"id": memory_id, "captured": memory_id is not None}


def _deleted(done: bool, req: Any) -> dict[str, Any]:
    if not done:
        msg = f"memory {req.memory_id} not found for agent {req.agent_id!r}"
        raise MemoryNotFoundError(msg)
    return {"deleted": 1}


def session_json(record: Any, *, messages: bool) -> dict[str, Any]:
    """A session as JSON (``SessionOut``), with or without its messages."""
    return {
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "message_count": record.message_count,
        "messages": (
            [m.model_dump(mode="json", exclude_none=True) for m in record.messages]
            if messages
            else None
        ),
    }


def _session(record: Any, req: Any) -> dict[str, Any]:
    if record is None:
        msg = f"no session {req.session_id!r} for agent {req.agent_id!r}"
        raise MemoryNotFoundError(msg)
    return session_json(record, messages=True)


def _session_deleted(done: bool, req: Any) -> dict[str, Any]:
    if not done:
        msg = f"no session {req.session_id!r} for agent {req.agent_id!r}"
        raise MemoryNotFoundError(msg)
    return {"deleted": 1}


def _context(ctx: Any, _req: Any) -> dict[str, Any]:
    return {
        "text": ctx.text,
        "tokens": ctx.tokens,
        "role": ctx.role,
        "messages": list(ctx.messages),
        "entries": [e.to_json() for e in ctx.entries],
    }


def _history(history: Any, _req: Any) -> dict[str, Any]:
    return {
        "memory_id": history.memory_id,
        "versions": [v.to_json() for v in history.versions],
        "audit": [r.model_dump(mode="json") for r in history.audit],
    }


def _tool_deleted(done: bool, req: Any) -> dict[str, Any]:
    if not done:
        msg = f"no memory with id {req.memory_id!r} for agent {req.agent_id!r}"
        raise MemoryNotFoundError(msg)
    return {"id": req.memory_id, "deleted": True}


# -- argument mappings (input model -> implementation keywords) ------------------------------


def _store_many_args(req: rq.AddManyBody) -> dict[str, Any]:
    items = [item.model_dump(exclude_none=True) for item in req.items]
    return {"items": items, "agent_id": req.agent_id, "dedup": req.dedup}


def _messages_args(req: rq.MessagesBody) -> dict[str, Any]:
    args = _fields(req)
    args["messages"] = [m.model_dump(exclude_none=True) for m in req.messages]
    return args


def _learn_args(req: rq.LearnBody) -> dict[str, Any]:
    # A plain mapping: learn_from validates it itself and reports (never raises) bad outcomes.
    outcome = {k: v for k, v in _fields(req).items() if k != "agent_id" and v is not None}
    return {"outcome": outcome, "agent_id": req.agent_id}


def _import_args(req: rq.ImportBody) -> dict[str, Any]:
    return {"source": req.items, "agent_id": req.agent_id}


def _distillation_args(req: rq.DistillationBody) -> dict[str, Any]:
    # Plain turns: capture_distillation reads them as mappings.
    args = _fields(req)
    args["turns"] = [turn.model_dump() for turn in req.turns]
    return args


def _skills(skills: Any, _req: Any) -> dict[str, Any]:
    return {"skills": [s.to_json() for s in skills]}


def _runs(page: tuple[tuple[FineTuneRun, ...], int], _req: Any) -> dict[str, Any]:
    runs, total = page
    return {"runs": [r.model_dump(mode="json") for r in runs], "total": total}


def _cancelled(run_id: str | None, _req: Any) -> dict[str, Any]:
    return {"run_id": run_id, "cancelled": run_id is not None}


def _backfilled(done: tuple[int, int], _req: Any) -> dict[str, Any]:
    embedded, remaining = done
    return {"embedded": embedded, "remaining": remaining}


# -- implementations with logic of their own --------------------------------------------------


async def _search_and_ask(host: Host, call: Call, req: rq.AskBody) -> list[MemoryEntry]:
    # The server's LLM judges the memories (none: the first search alone is the answer).
    memory = await host.memory(call.tenant)
    return await memory.search_and_ask(
        req.query,
        agent_id=call.agent_id,
        limit=req.limit,
        categories=req.categories,
        llm=host.ask_llm(),
        max_rounds=req.max_rounds,
    )


async def _consolidate(host: Host, call: Call, req: rq.ConsolidateBody) -> ConsolidationResult:
    memory = await host.memory(call.tenant)
    return await memory.consolidate(
        agent_id=call.agent_id,
        strategy=req.strategy,
        llm=host.llm,
        dry_run=req.dry_run,
        min_age_days=req.min_age_days,
    )


async def _agents(host: Host, call: Call, _req: rq.AgentsParams) -> list[str]:
    # An agent key sees only itself (the policy made it its own agent).
    if call.agent is not None:
        return [call.agent]
    return await (await host.memory(call.tenant)).agents()


async def _profile(host: Host, call: Call, _req: rq.ProfileParams) -> AgentProfile:
    return await (await host.memory(call.tenant)).learning.get_profile(call.agent_id)


async def _profiles(host: Host, call: Call, _req: rq.ProfilesParams) -> list[AgentProfile]:
    return await (await host.memory(call.tenant)).learning.profiles.list()


async def _approvals(host: Host, call: Call, req: rq.ApprovalsParams) -> list[ApprovalItem]:
    memory = await host.memory(call.tenant)
    return await memory.learning.approvals(status=req.status, limit=req.limit)


async def _approval(host: Host, call: Call, req: rq.ApprovalParams) -> ApprovalItem:
    return await (await host.memory(call.tenant)).learning.approval(req.item_id)


async def _approve(host: Host, call: Call, req: rq.DecideBody) -> ApprovalItem:
    # The approval queue audits the decision under the actor itself.
    why = check_reason(req.reason)
    memory = await host.memory(call.tenant)
    return await memory.learning.approve(req.item_id, actor=call.actor.label, reason=why)


async def _reject(host: Host, call: Call, req: rq.DecideBody) -> ApprovalItem:
    why = check_reason(req.reason, required=True)
    assert why is not None  # required=True never returns None
    memory = await host.memory(call.tenant)
    return await memory.learning.reject(req.item_id, actor=call.actor.label, reason=why)


async def _org_policies(host: Host, call: Call, _req: rq.OrgPoliciesParams) -> list[OrgFact]:
    memory = await host.memory(call.tenant)
    return list(await memory.learning.org.list_policies())


async def _org_search(host: Host, call: Call, req: rq.OrgSearchBody) -> list[OrgFact]:
    try:
        kinds = None if not req.kinds else tuple(req.kinds)
        query = OrgMemoryQuery(text=req.query, kinds=kinds, limit=req.limit)
    except ValidationError as exc:
        raise model_error(exc) from None
    memory = await host.memory(call.tenant)
    return list(await memory.learning.org.query(query))


async def _org_write(host: Host, call: Call, req: rq.OrgWriteBody) -> str:
    """Append an org fact; write access by kind (policies: humans; ADRs: senior and above)."""
    memory = await host.memory(call.tenant)
    if call.agent is not None:
        # Written by an agent (an agent key, or a human naming one): its seniority decides.
        profile = await memory.learning.get_profile(call.agent)
        author = OrgFactAuthor(kind="agent", name=call.agent, seniority=profile.seniority)
    else:
        author = OrgFactAuthor(kind="human", name=call.actor.name)
    try:
        fact = OrgFactWriteRequest(
            kind=req.kind, content=req.content, tags=tuple(req.tags), supersedes=req.supersedes
        )
    except ValidationError as exc:
        raise model_error(exc) from None
    return await memory.learning.org.write(fact, author=author)


async def _skill_pool(host: Host, call: Call, req: rq.SkillsParams) -> list[PooledSkill]:
    memory = await host.memory(call.tenant)
    return await memory.learning.skills(include_superseded=req.include_superseded)


# -- the table --------------------------------------------------------------------------------

_LIST_LIMIT = {"limit": {"maximum": 100}}

OPERATIONS: tuple[Operation, ...] = (
    # memories
    Operation(
        "store", rq.AddBody, Scope.WRITE, "Store a memory", _stored,
        impl=AsyncMemory.write, audit=Audit.ACTOR,
        http=Http("POST", "/v1/memories", "memories", 201, rs.StoredOut, name="add"),
        tool=Tool(
            "store_memory", "Store a memory",
            "Remember something for later: a fact, decision, preference or outcome. Duplicates "
            "are recognised and a statement that contradicts an older one supersedes it. "
            "Returns the memory's id and the write decision (add, noop, supersede or reject).",
            fields=("content", "agent_id", "category", "tags", "metadata"),
        ),
    ),
    Operation(
        "store_many", rq.AddManyBody, Scope.WRITE, "Store many memories in one transaction",
        _field("ids"), arguments=_store_many_args,
        impl=AsyncMemory.add_many, audit=Audit.ACTOR,
        http=Http("POST", "/v1/memories/batch", "memories", 201, rs.IdsOut, name="add_many"),
    ),
    Operation(
        "store_messages", rq.MessagesBody, Scope.WRITE,
        "Remember a conversation (its turns, or with infer the facts it states)",
        _field("ids"), arguments=_messages_args,
        impl=AsyncMemory.add_messages, audit=Audit.ACTOR,
        http=Http("POST", "/v1/messages", "memories", 201, rs.IdsOut),
        tool=Tool(
            "remember_conversation", "Remember a conversation",
            "Remember a conversation: each user and assistant message becomes a memory, or, "
            "with infer=true, the durable facts it states (deduplicated; a changed fact "
            "supersedes the old one). Returns the ids stored.",
            fields=("messages", "agent_id", "infer", "session_id", "user_id"),
            limits={"messages": {"maxItems": 200}},
        ),
    ),
    Operation(
        "list", rq.ListParams, Scope.READ, "List an agent's memories, newest first",
        _entries("memories"),
        impl=AsyncMemory.list,
        http=Http("GET", "/v1/memories", "memories", response=rs.MemoriesOut, name="list_memories"),
        tool=Tool(
            "list_memories", "List memories",
            "List the agent's memories, newest first, a page at a time.",
            fields=("agent_id", "category", "limit", "offset", "filters"), limits=_LIST_LIMIT,
            read_only=True,
        ),
    ),
    Operation(
        "clear", rq.ClearParams, Scope.ADMIN, "Delete all of an agent's memories (admin)",
        _field("deleted"),
        impl=AsyncMemory.clear, audit=Audit.REASON,
        http=Http("DELETE", "/v1/memories", "memories", response=rs.DeletedOut),
    ),
    Operation(
        "get", rq.GetParams, Scope.READ, "Get one memory", _entry,
        impl=AsyncMemory.get,
        http=Http("GET", "/v1/memories/{memory_id}", "memories", response=rs.EntryOut),
        tool=Tool(
            "recall_memory", "Recall a memory", "Read one memory in full by its id.",
            read_only=True,
        ),
    ),
    Operation(
        "delete", rq.DeleteParams, Scope.WRITE, "Delete one memory (audited)", _deleted,
        impl=AsyncMemory.delete, audit=Audit.REASON,
        http=Http("DELETE", "/v1/memories/{memory_id}", "memories", response=rs.DeletedOut),
        tool=Tool(
            "delete_memory", "Delete a memory",
            "Permanently delete one memory. Destructive: requires confirm=true and a reason, "
            "which the audit log records with the caller.",
            confirm=True, render=_tool_deleted,
            output_schema={
                "type": "object",
                "properties": {"id": {"type": "string"}, "deleted": {"type": "boolean"}},
                "required": ["id", "deleted"],
            },
        ),
    ),
    Operation(
        "update", rq.UpdateBody, Scope.WRITE,
        "Change a memory: a new version supersedes it (audited)", _entry,
        impl=AsyncMemory.update, audit=Audit.REASON,
        http=Http(
            "PATCH", "/v1/memories/{memory_id}", "memories", response=rs.EntryOut,
            body="UpdateBody",
        ),
        tool=Tool(
            "update_memory", "Update a memory",
            "Correct or change a memory by its id. The old version is kept (superseded) and "
            "the change is audited. Returns the new version.",
            fields=("memory_id", "agent_id", "content", "tags", "metadata"),
        ),
    ),
    Operation(
        "history", rq.HistoryParams, Scope.READ,
        "Every version of a memory, with its audit records", _history,
        impl=AsyncMemory.history,
        http=Http(
            "GET", "/v1/memories/{memory_id}/history", "memories", response=rs.HistoryOut
        ),
        tool=Tool(
            "memory_history", "Memory history",
            "Every version of a memory (by any version's id), oldest first, with who changed "
            "it and when.",
            read_only=True,
        ),
    ),
    Operation(
        "count", rq.CountParams, Scope.READ, "Count an agent's memories", _field("count"),
        impl=AsyncMemory.count,
        http=Http("GET", "/v1/count", "memories", response=rs.CountOut),
    ),
    # retrieval
    Operation(
        "search", rq.SearchBody, Scope.READ, "Hybrid search of an agent's memories",
        _entries("results"),
        impl=AsyncMemory.search,
        http=Http("POST", "/v1/search", "retrieval", response=rs.EntriesOut),
        tool=Tool(
            "search_memory", "Search memories",
            "Search the agent's memories (hybrid semantic and keyword search), best first. "
            "Each result carries its id and a relevance_score.",
            fields=("query", "agent_id", "limit", "categories", "include_shared", "filters"),
            limits={"query": {"maxLength": 2000}, "categories": {"minItems": 1}},
            read_only=True,
        ),
    ),
    Operation(
        "context", rq.ContextBody, Scope.READ, "Relevant memories packed into a token budget",
        _context,
        impl=AsyncMemory.context,
        http=Http("POST", "/v1/context", "retrieval", response=rs.ContextOut),
        tool=Tool(
            "memory_context", "Memory context",
            "The memories relevant to a task (the agent's own and the organisation's shared "
            "knowledge, marked as such), packed into a token budget as one prompt message.",
            fields=("query", "agent_id", "token_budget", "limit", "categories"),
            limits={"query": {"maxLength": 2000}, "token_budget": {"maximum": 8000}},
            read_only=True,
        ),
    ),
    Operation(
        "search_and_ask", rq.AskBody, Scope.READ,
        "Search, and search again reformulated while the server's LLM finds the memories "
        "insufficient (Search-and-Ask)",
        _entries("results"),
        invoke=_search_and_ask,
        http=Http("POST", "/v1/search/ask", "retrieval", response=rs.EntriesOut),
        tool=Tool(
            "search_and_ask", "Search memories and ask",
            "Search the agent's memories for a question; while the memories found do not "
            "answer it, search again with a reformulated query. Best first.",
            limits={"query": {"maxLength": 2000}, "limit": {"maximum": 20}}, read_only=True,
        ),
    ),
    # bulk and lifecycle
    Operation(
        "export", rq.ExportParams, Scope.READ,
        "Export memories (one agent: read; whole tenant: admin)", _field("memories"),
        impl=AsyncMemory.export, policy=AGENT_OR_ADMIN_TENANT,
        http=Http("GET", "/v1/export", "bulk", response=rs.MemoriesOut),
    ),
    Operation(
        "import", rq.ImportBody, Scope.ADMIN, "Import exported memories (admin; idempotent)",
        _field("added"), arguments=_import_args,
        impl=AsyncMemory.import_, policy=AGENT_OR_TENANT, audit=Audit.ACTOR,
        http=Http("POST", "/v1/import", "bulk", response=rs.ImportOut, name="import_"),
    ),
    Operation(
        "consolidate", rq.ConsolidateBody, Scope.ADMIN, "Consolidate an agent's memories",
        _dump, http=Http("POST", "/v1/consolidate", "lifecycle", response=ConsolidationResult),
        invoke=_consolidate, audit=Audit.REASON,
    ),
    Operation(
        "sweep", rq.SweepBody, Scope.ADMIN, "Enforce retention now (admin)",
        lambda report, _req: {"expired": report.expired, "evicted": report.evicted},
        impl=AsyncMemory.sweep, policy=AGENT_OR_TENANT, audit=Audit.ACTOR,
        http=Http("POST", "/v1/sweep", "lifecycle", response=rs.SweepOut),
    ),
    Operation(
        "archived", rq.ArchivedParams, Scope.READ, "An agent's archived memories",
        _dumps("archived"),
        impl=AsyncMemory.archived,
        http=Http("GET", "/v1/archive", "lifecycle", response=rs.ArchivedOut),
    ),
    Operation(
        "archive", rq.ArchiveBody, Scope.WRITE, "Move memories to the archive (restorable by id)",
        _field("index"), http=Http("POST", "/v1/archive", "lifecycle", response=rs.ArchiveOut),
        impl=AsyncMemory.archive, audit=Audit.ACTOR,
    ),
    Operation(
        "restore", rq.RestoreBody, Scope.WRITE, "Restore an archived memory", _entry,
        impl=AsyncMemory.restore, audit=Audit.REASON,
        http=Http(
            "POST", "/v1/archive/{memory_id}/restore", "lifecycle", response=rs.EntryOut,
            body="RestoreBody",
        ),
    ),
    Operation(
        "audit", rq.AuditParams, Scope.ADMIN, "Audit records, oldest first (admin)",
        _dumps("records"), http=Http("GET", "/v1/audit", "lifecycle", response=rs.AuditOut),
        impl=AsyncMemory.audit, policy=AGENT_OR_TENANT,
    ),
    Operation(
        "agents", rq.AgentsParams, Scope.READ, "Agents with memories", _field("agents"),
        invoke=_agents, policy=SELF,
        http=Http("GET", "/v1/agents", "bulk", response=rs.AgentsOut),
    ),
    Operation(
        "stats", rq.StatsParams, Scope.READ, "Counts of the tenant's store", _dump,
        impl=AsyncMemory.stats, policy=TENANT,
        http=Http("GET", "/v1/stats", "bulk", response=StoreStats),
    ),
    # shared knowledge
    Operation(
        "publish", rq.PublishBody, Scope.WRITE, "Publish shared knowledge", _field("id"),
        impl=AsyncMemory.publish, audit=Audit.ACTOR,
        http=Http("POST", "/v1/shared", "shared", 201, rs.IdOut),
        tool=Tool(
            "publish_shared", "Publish shared knowledge",
            "Publish knowledge every agent of the organisation can find with search_shared, "
            "authored by the agent (scope 'org': an org fact every agent's context gets, if "
            "the agent's seniority may write that kind). Returns its id.",
            fields=("content", "agent_id", "category", "tags", "scope", "kind"),
        ),
    ),
    Operation(
        "search_shared", rq.SharedSearchBody, Scope.READ, "Search the tenant's shared knowledge",
        _entries("results"),
        impl=AsyncMemory.search_shared, policy=SELF,
        http=Http("POST", "/v1/shared/search", "shared", response=rs.EntriesOut),
        tool=Tool(
            "search_shared", "Search shared knowledge",
            "Search the organisation's shared knowledge (every author), best first.",
            limits={"query": {"maxLength": 2000}}, read_only=True,
        ),
    ),
    Operation(
        "retract", rq.RetractParams, Scope.WRITE, "Retract shared knowledge the agent published",
        _field("retracted"),
        impl=AsyncMemory.retract, audit=Audit.REASON,
        http=Http("DELETE", "/v1/shared/{memory_id}", "shared", response=rs.RetractedOut),
    ),
    # automatic capture and working memory
    Operation(
        "capture_episode", rq.EpisodeBody, Scope.WRITE,
        "Capture a run's result summary as an episode (never fails the run)", _captured,
        impl=AsyncMemory.capture_episode, audit=Audit.ACTOR,
        http=Http("POST", "/v1/episodes", "capture", response=rs.CapturedOut),
        tool=Tool(
            "capture_episode", "Capture a run episode",
            "Record what an autonomous run or a triggered run (cron, file_watch, webhook) "
            "achieved, as an episodic memory labelled autonomous_run. Returns its id.",
        ),
    ),
    Operation(
        "capture_distillation", rq.DistillationBody, Scope.WRITE,
        "Capture a finished task's trajectory (turns, tokens, tools) as a distillation episode",
        _captured,
        impl=AsyncMemory.capture_distillation, audit=Audit.ACTOR, arguments=_distillation_args,
        http=Http("POST", "/v1/distillations", "capture", response=rs.CapturedOut),
        tool=Tool(
            "capture_distillation", "Capture a task trajectory",
            "Record how a finished task went (outcome, turns with tokens and tool calls, "
            "error) as an episodic memory tagged distillation, for later consolidation.",
        ),
    ),
    Operation(
        "working_note", rq.WorkingNoteBody, Scope.WRITE,
        "Add a note to an agent's working memory for a task (in process, never persisted)",
        lambda note_id, req: {"id": note_id, "task_id": req.task_id},
        impl=AsyncMemory.working_note,
        http=Http(
            "POST", "/v1/working/{task_id}/notes", "working", 201, rs.NoteIdOut,
            body="WorkingNoteBody",
        ),
        tool=Tool(
            "working_memory_note", "Note in working memory",
            "Jot down something to keep in mind while working on a task (plan, intermediate "
            "result, open question). Never persisted; the oldest notes go first when full.",
        ),
    ),
    Operation(
        "working", rq.WorkingParams, Scope.READ, "An agent's working memory for a task",
        lambda pad, _req: pad.to_json(),
        impl=AsyncMemory.working,
        http=Http("GET", "/v1/working/{task_id}", "working", response=rs.WorkingOut),
        tool=Tool(
            "working_memory", "Read working memory",
            "The notes of the agent's working memory for a task, oldest first, and their "
            "rendering for a prompt.",
            read_only=True,
        ),
    ),
    Operation(
        "clear_working", rq.WorkingParams, Scope.WRITE,
        "Forget an agent's working memory for a task", _field("cleared"),
        impl=AsyncMemory.clear_working,
        http=Http("DELETE", "/v1/working/{task_id}", "working", response=rs.ClearedOut),
    ),
    # sessions
    Operation(
        "sessions", rq.SessionsParams, Scope.READ, "An agent's sessions, most recent first",
        lambda found, _req: {"sessions": [session_json(r, messages=False) for r in found]},
        invoke=Host.sessions,
        http=Http("GET", "/v1/sessions", "sessions", response=rs.SessionsOut),
    ),
    Operation(
        "session", rq.SessionParams, Scope.READ,
        "One session with its messages ('latest' for the most recent)", _session,
        invoke=Host.session,
        http=Http("GET", "/v1/sessions/{session_id}", "sessions", response=rs.SessionOut),
    ),
    Operation(
        "save_session", rq.SessionBody, Scope.WRITE, "Save a session's message history",
        lambda record, _req: session_json(record, messages=False),
        invoke=Host.save_session,
        http=Http(
            "PUT", "/v1/sessions/{session_id}", "sessions", response=rs.SessionOut,
            body="SessionBody",
        ),
    ),
    Operation(
        "delete_session", rq.DeleteSessionParams, Scope.WRITE, "Delete one session",
        _session_deleted,
        invoke=Host.delete_session,
        http=Http("DELETE", "/v1/sessions/{session_id}", "sessions", response=rs.DeletedOut),
    ),
    # learning: lessons, profiles, the approval queue, the evolver, org memory
    Operation(
        "learn_from", rq.LearnBody, Scope.WRITE,
        "Learn from a finished task (never fails the caller's task)", _dump,
        impl=AsyncMemory.learn_from, audit=Audit.ACTOR,
        arguments=_learn_args,
        http=Http("POST", "/v1/learn", "learning", response=LearnReport),
        tool=Tool(
            "learn_from_task", "Learn from a task",
            "Report a finished task: whether it succeeded, the error, the tool calls made. A "
            "failed task becomes a lesson (when X, do Y) that future contexts include.",
            fields=("agent_id", "success", "task_type", "description", "error",
                    "error_category", "tool_calls", "retry_count", "turn_count",
                    "quality_score", "applied_skills"),
        ),
    ),
    Operation(
        "set_profile", rq.ProfileBody, Scope.WRITE,
        "Set an agent's role, department and seniority (humans and admins)", _dump,
        impl=AsyncMemory.set_profile, policy=TENANT,
        http=Http(
            "PUT", "/v1/profiles/{agent_id}", "learning", response=AgentProfile,
            body="ProfileBody",
        ),
    ),
    Operation(
        "profile", rq.ProfileParams, Scope.READ, "One agent's profile", _dump,
        invoke=_profile,
        http=Http("GET", "/v1/profiles/{agent_id}", "learning", response=AgentProfile),
    ),
    Operation(
        "profiles", rq.ProfilesParams, Scope.READ, "Every agent profile of the tenant",
        _dumps("profiles"),
        invoke=_profiles, policy=TENANT,
        http=Http("GET", "/v1/profiles", "learning", response=rs.ProfilesOut),
    ),
    Operation(
        "approvals", rq.ApprovalsParams, Scope.READ, "The approval queue, newest first",
        _dumps("approvals"),
        invoke=_approvals, policy=ANY,
        http=Http("GET", "/v1/approvals", "learning", response=rs.ApprovalsOut),
        tool=Tool(
            "list_approvals", "List approval items",
            "The human approval queue: skill proposals waiting for (or past) a decision.",
            read_only=True, limits={"limit": {"maximum": 100}},
        ),
    ),
    Operation(
        "approval", rq.ApprovalParams, Scope.READ, "One item of the approval queue", _dump,
        invoke=_approval, policy=ANY,
        http=Http("GET", "/v1/approvals/{item_id}", "learning", response=ApprovalItem),
    ),
    Operation(
        "approve", rq.DecideBody, Scope.WRITE,
        "Approve a queued proposal and apply it (humans and admins)", _dump,
        invoke=_approve, policy=humans_only("approve proposals"),
        http=Http(
            "POST", "/v1/approvals/{item_id}/approve", "learning", response=ApprovalItem,
            body="DecideBody",
        ),
    ),
    Operation(
        "reject", rq.DecideBody, Scope.WRITE,
        "Reject a queued proposal with a reason (humans and admins)", _dump,
        invoke=_reject, policy=humans_only("reject proposals"),
        http=Http(
            "POST", "/v1/approvals/{item_id}/reject", "learning", response=ApprovalItem,
            body="DecideBody", name="reject_approval",
        ),
    ),
    Operation(
        "evolve", rq.EvolveBody, Scope.ADMIN, "Run one skill-evolver cycle (admin)", _dump,
        impl=AsyncMemory.evolve, policy=TENANT,
        http=Http("POST", "/v1/evolve", "learning", response=EvolverReport),
    ),
    Operation(
        "prune_procedural", rq.PruneProceduralBody, Scope.ADMIN,
        "Prune an agent's procedural lessons into the archive (admin)", _dump,
        impl=AsyncMemory.prune_procedural, audit=Audit.ACTOR,
        http=Http("POST", "/v1/procedural/prune", "learning", response=PruneReport),
    ),
    Operation(
        "org_policies", rq.OrgPoliciesParams, Scope.READ, "The organisation's core policies",
        _dumps("facts"),
        invoke=_org_policies, policy=ANY,
        http=Http("GET", "/v1/org/policies", "org", response=rs.OrgFactsOut),
    ),
    Operation(
        "org_search", rq.OrgSearchBody, Scope.READ,
        "Search the organisation's ADRs, procedures, conventions and skills", _dumps("facts"),
        invoke=_org_search, policy=ANY,
        http=Http("POST", "/v1/org/search", "org", response=rs.OrgFactsOut),
        tool=Tool(
            "search_org", "Search org knowledge",
            "Search the organisation's ADRs, procedures, conventions and approved skills.",
            read_only=True, limits={"query": {"maxLength": 2000}},
        ),
    ),
    Operation(
        "org_write", rq.OrgWriteBody, Scope.WRITE,
        "Append an org fact (policies: humans; ADRs, procedures: senior and above)",
        _field("id"),
        invoke=_org_write, policy=SELF,
        http=Http("POST", "/v1/org/facts", "org", 201, rs.IdOut),
    ),
    Operation(
        "skills", rq.SkillsParams, Scope.READ, "The org skill pool with application counts",
        _skills, http=Http("GET", "/v1/skills", "org", response=rs.SkillsOut),
        invoke=_skill_pool, policy=ANY,
    ),
    # embedder fine-tuning (admin; memory.fine_tune must be enabled)
    Operation(
        "fine_tune_start", rq.FineTuneBody, Scope.ADMIN,
        "Start a fine-tune of the embedder; returns the run at once (admin)", _dump,
        invoke=Host.fine_tune_start, policy=TENANT,
        http=Http("POST", "/v1/admin/memory/fine-tune", "fine-tune", 202, FineTuneRun),
        tool=Tool(
            "memory_fine_tune_start", "Start an embedder fine-tune",
            "Fine-tune the embedding model on the organisation's documents (source_dir) or "
            "query/passage pairs (pairs_file); returns the run at once: poll "
            "memory_fine_tune_status.",
        ),
    ),
    Operation(
        "fine_tune_preflight", rq.FineTuneBody, Scope.ADMIN,
        "Check a fine-tune plan against the server without starting it (admin)", _dump,
        invoke=Host.fine_tune_preflight, policy=TENANT,
        http=Http(
            "POST", "/v1/admin/memory/fine-tune/preflight", "fine-tune", response=PreflightResult,
        ),
        tool=Tool(
            "memory_fine_tune_preflight", "Preflight a fine-tune plan",
            "Check a fine-tune plan (data, registry, trainer, LLM) without starting it.",
            read_only=True,
        ),
    ),
    Operation(
        "fine_tune_resume", rq.FineTuneResumeParams, Scope.ADMIN,
        "Resume a failed or cancelled fine-tune run (admin)", _dump,
        invoke=Host.fine_tune_resume, policy=TENANT,
        http=Http(
            "POST", "/v1/admin/memory/fine-tune/{run_id}/resume", "fine-tune", 202, FineTuneRun,
        ),
        tool=Tool(
            "memory_fine_tune_resume", "Resume a fine-tune run",
            "Resume a failed or cancelled fine-tune run from its first unfinished stage.",
        ),
    ),
    Operation(
        "fine_tune_status", rq.FineTuneStatusParams, Scope.ADMIN,
        "A fine-tune run's status (default: the active run, else the latest) (admin)", _dump,
        invoke=Host.fine_tune_status, policy=TENANT,
        http=Http("GET", "/v1/admin/memory/fine-tune/status", "fine-tune", response=FineTuneStatus),
        tool=Tool(
            "memory_fine_tune_status", "Fine-tune status",
            "The status of a fine-tune run: its stages, current stage and progress.",
            read_only=True,
        ),
    ),
    Operation(
        "fine_tune_runs", rq.FineTuneRunsParams, Scope.ADMIN,
        "A page of fine-tune runs, newest first (admin)", _runs,
        invoke=Host.fine_tune_runs, policy=TENANT,
        http=Http(
            "GET", "/v1/admin/memory/fine-tune/runs", "fine-tune", response=rs.FineTuneRunsOut,
        ),
        tool=Tool(
            "memory_fine_tune_runs", "List fine-tune runs",
            "Past and current fine-tune runs, newest first, with the total.",
            read_only=True, limits=_LIST_LIMIT,
        ),
    ),
    Operation(
        "fine_tune_cancel", rq.FineTuneCancelBody, Scope.ADMIN,
        "Cancel the active fine-tune run (destructive: confirm and a reason; audited)",
        _cancelled,
        invoke=Host.fine_tune_cancel, policy=TENANT,
        http=Http(
            "POST", "/v1/admin/memory/fine-tune/cancel", "fine-tune",
            response=rs.FineTuneCancelledOut,
        ),
        tool=Tool(
            "memory_fine_tune_cancel", "Cancel the fine-tune run",
            "Cancel the active fine-tune run; finished stages stay for resume. Destructive: "
            "requires confirm=true and a reason, which the audit log records with the caller.",
        ),
    ),
    Operation(
        "fine_tune_checkpoints", rq.NoParams, Scope.ADMIN,
        "Every checkpoint of the registry, newest first (admin)", _dumps("checkpoints"),
        invoke=Host.fine_tune_checkpoints, policy=TENANT,
        http=Http(
            "GET", "/v1/admin/memory/fine-tune/checkpoints", "fine-tune",
            response=rs.CheckpointsOut,
        ),
        tool=Tool(
            "memory_fine_tune_checkpoints", "List checkpoints",
            "The fine-tuned checkpoints of the registry, newest first, the active one marked.",
            read_only=True,
        ),
    ),
    Operation(
        "active_embedder", rq.NoParams, Scope.ADMIN,
        "Which embedder the registry serves now (admin)", _dump,
        invoke=Host.active_embedder, policy=TENANT,
        http=Http(
            "GET", "/v1/admin/memory/embedder", "fine-tune", response=ActiveEmbedderSnapshot,
        ),
        tool=Tool(
            "memory_active_embedder", "Active embedder",
            "The embedder the checkpoint registry serves: the deployed checkpoint or the base "
            "model.",
            read_only=True,
        ),
    ),
    Operation(
        "checkpoint_rollback", rq.CheckpointRollbackBody, Scope.ADMIN,
        "Make a checkpoint ('base': the base model) the active embedder (destructive, audited)",
        _dump,
        invoke=Host.checkpoint_rollback, policy=TENANT,
        http=Http(
            "POST", "/v1/admin/memory/fine-tune/checkpoints/{checkpoint_id}/rollback", "fine-tune",
            response=CheckpointRecord, body="CheckpointRollbackBody",
        ),
        tool=Tool(
            "memory_checkpoint_rollback", "Roll back the embedder",
            "Make a checkpoint (or 'base') the active embedder again; reindex afterwards. "
            "Destructive: requires confirm=true and a reason, which the audit log records "
            "with the caller.",
        ),
    ),
    # conversations (issue 18, seed 004): the message log, its views, context window, compaction
    Operation(
        "conversation_append", rq.ConversationAppendBody, Scope.WRITE,
        "Append turns to a session's conversation (each stored at once, never rewritten)",
        _dump,
        invoke=Host.conversation_append,
        http=Http(
            "POST", "/v1/conversations/{session_id}/messages", "conversations", 201,
            ConversationPage, body="ConversationAppendBody",
        ),
        tool=Tool(
            "conversation_append", "Append to a conversation",
            "Append one or more turns to the conversation of a session (created on the first "
            "append). Each message is stored at once and never rewritten; agent_visible, "
            "user_visible and focus_pinned say who sees it and whether compaction may touch "
            "it. Returns the stored messages with their ids.",
            limits={"messages": {"maxItems": 200}},
        ),
    ),
    Operation(
        "conversation_messages", rq.ConversationMessagesParams, Scope.READ,
        "A page of a conversation's messages as one view reads them (agents: the agent view)",
        _dump,
        invoke=Host.conversation_messages,
        http=Http(
            "GET", "/v1/conversations/{session_id}/messages", "conversations",
            response=ConversationPage,
        ),
        tool=Tool(
            "conversation_messages", "Read a conversation",
            "The messages of a session's conversation as the model sees them (compacted turns "
            "replaced by their summary; messages hidden from the agent left out), a page at a "
            "time, oldest first.",
            fields=("session_id", "agent_id", "limit", "offset"), limits=_LIST_LIMIT,
            read_only=True,
        ),
    ),
    Operation(
        "conversations", rq.ConversationsParams, Scope.READ,
        "An agent's conversations, latest append first", _dumps("conversations"),
        invoke=Host.conversations,
        http=Http("GET", "/v1/conversations", "conversations", response=rs.ConversationsOut),
        tool=Tool(
            "conversation_list", "List conversations",
            "The agent's conversations (one per session), latest first, with how many "
            "messages the model sees in each.",
            fields=("agent_id", "limit", "offset"), limits=_LIST_LIMIT, read_only=True,
        ),
    ),
    Operation(
        "conversation_context", rq.ConversationContextParams, Scope.READ,
        "A conversation's context window: token pressure, compaction state, the agent view",
        _dump,
        invoke=Host.conversation_context,
        http=Http(
            "GET", "/v1/conversations/{session_id}/context", "conversations",
            response=ContextWindow,
        ),
        tool=Tool(
            "conversation_context", "Conversation context window",
            "How full a conversation's context window is (tokens against the budget, the soft "
            "and hard compaction thresholds), what compaction did so far, and the messages "
            "the model is sent.",
            read_only=True,
        ),
    ),
    Operation(
        "conversation_compact", rq.CompactBody, Scope.WRITE,
        "Compact a conversation now: mark tool pairs (soft), apply anchored summaries (hard)",
        _dump,
        invoke=Host.conversation_compact,
        http=Http(
            "POST", "/v1/conversations/{session_id}/compact", "conversations",
            response=CompactionReport, body="CompactBody",
        ),
        tool=Tool(
            "conversation_compact", "Compact a conversation",
            "Relieve a conversation's context pressure: above the soft threshold tool "
            "call/result pairs are marked for a deferred summary; above the hard threshold "
            "they (and the oldest turns) are replaced by anchored summaries in the model's "
            "view. Nothing is deleted. Returns what was done.",
        ),
    ),
    Operation(
        "conversation_status", rq.ConversationStatusParams, Scope.READ,
        "The tenant's conversation counts and embedding queue / backfill progress (not agents)",
        _dump,
        invoke=Host.conversation_status, policy=TENANT,
        http=Http(
            "GET", "/v1/stats/conversations", "conversations", response=ConversationStatus
        ),
    ),
    Operation(
        "conversation_backfill", rq.ConversationBackfillBody, Scope.ADMIN,
        "Embed every stored message that has no vector yet, now (admin)", _backfilled,
        invoke=Host.conversation_backfill, policy=TENANT,
        http=Http(
            "POST", "/v1/admin/conversations/backfill", "conversations",
            response=rs.ConversationBackfillOut,
        ),
    ),
    # operational records (seed 001): tasks, costs, channel messages, audit entries, agent
    # runtime states, settings; inputs and implementations in memvault.api.records
    Operation(
        "tasks", rec.TasksParams, Scope.READ, "Tasks by status, assignee and project",
        rec.records_json("tasks"),
        invoke=rec.tasks, policy=SELF,
        http=Http("GET", "/v1/tasks", "operations", response=rec.TasksOut),
        tool=Tool(
            "list_tasks", "List tasks",
            "The tasks assigned to the agent (by status and project), oldest first.",
            read_only=True, limits={"limit": {"maximum": 200}},
        ),
    ),
    Operation(
        "task", rec.TaskParams, Scope.READ, "One task", rec.record_json,
        invoke=rec.task, policy=SELF,
        http=Http("GET", "/v1/tasks/{task_id}", "operations", response=pm.Task),
    ),
    Operation(
        "create_task", rec.TaskBody, Scope.WRITE, "Create a task (assigned to agent_id)",
        rec.record_json,
        invoke=rec.create_task, policy=SELF,
        http=Http("POST", "/v1/tasks", "operations", status=201, response=pm.Task),
        tool=Tool(
            "create_task", "Create a task",
            "Record a task for the agent to work on: a title, optional description, project "
            "and priority. Returns the task with its id.",
            fields=("title", "description", "project", "priority", "agent_id"),
        ),
    ),
    Operation(
        "set_task_status", rec.TaskStatusBody, Scope.WRITE,
        "Move a task to another status (allowed changes only)", rec.record_json,
        invoke=rec.set_task_status, policy=SELF,
        http=Http(
            "POST", "/v1/tasks/{task_id}/status", "operations", response=pm.Task,
            body="TaskStatusBody",
        ),
        tool=Tool(
            "set_task_status", "Update a task's status",
            "Move one of the agent's tasks to in_progress, in_review, blocked, completed, "
            "failed or cancelled (only the changes the task lifecycle allows).",
        ),
    ),
    Operation(
        "delete_task", rec.TaskParams, Scope.WRITE, "Delete a task", _field("deleted"),
        invoke=rec.delete_task, policy=SELF,
        http=Http("DELETE", "/v1/tasks/{task_id}", "operations", response=rs.DeletedOut),
    ),
    Operation(
        "costs", rec.CostsParams, Scope.READ,
        "Cost records of model calls, by agent, task, model and time", rec.records_json("records"),
        invoke=rec.costs, policy=SELF,
        http=Http("GET", "/v1/costs", "operations", response=rec.CostsOut),
    ),
    Operation(
        "cost_summary", rec.CostSummaryParams, Scope.READ,
        "Costs summed per agent, task, model or day", rec.records_json("groups"),
        invoke=rec.cost_summary, policy=SELF,
        http=Http("GET", "/v1/costs/summary", "operations", response=rec.CostSummaryOut),
        tool=Tool(
            "cost_summary", "Summarise model costs",
            "Tokens and cost of the agent's model calls, summed per task, model or day.",
            read_only=True,
        ),
    ),
    Operation(
        "channel_messages", rec.ChannelMessagesParams, Scope.READ,
        "A channel's messages in the order written (the latest limit)",
        rec.records_json("messages"),
        invoke=rec.channel_messages, policy=SELF,
        http=Http(
            "GET", "/v1/channels/{channel}/messages", "operations", response=rec.MessagesOut
        ),
        tool=Tool(
            "channel_history", "Read a channel",
            "The latest messages of a channel (the agent's own), oldest first.",
            read_only=True, limits={"limit": {"maximum": 200}},
        ),
    ),
    Operation(
        "post_message", rec.MessageBody, Scope.WRITE, "Append a message to a channel",
        rec.record_json,
        invoke=rec.post_message, policy=SELF,
        http=Http(
            "POST", "/v1/channels/{channel}/messages", "operations", status=201,
            response=pm.Message, body="MessageBody",
        ),
        tool=Tool(
            "post_message", "Post to a channel",
            "Append a message to a channel's history.",
            fields=("channel", "content", "role", "agent_id"),
        ),
    ),
    Operation(
        "audit_entries", rec.AuditEntriesParams, Scope.READ,
        "Audited agent actions by agent, action, verdict, risk and time, newest first",
        rec.records_json("entries"),
        invoke=rec.audit_entries, policy=SELF,
        http=Http("GET", "/v1/audit-entries", "operations", response=rec.AuditEntriesOut),
    ),
    Operation(
        "record_audit_entry", rec.AuditEntryBody, Scope.WRITE,
        "Record an audited agent action", rec.record_json,
        invoke=rec.record_audit_entry, policy=SELF,
        http=Http("POST", "/v1/audit-entries", "operations", status=201, response=pm.AuditEntry),
    ),
    Operation(
        "agent_states", rec.AgentStatesParams, Scope.READ,
        "Agents' runtime states (active: running, paused or waiting)",
        rec.records_json("states"),
        invoke=rec.agent_states, policy=SELF,
        http=Http("GET", "/v1/agent-states", "operations", response=rec.AgentStatesOut),
    ),
    Operation(
        "agent_state", rec.AgentStateParams, Scope.READ, "One agent's runtime state",
        rec.record_json,
        invoke=rec.agent_state, policy=SELF,
        http=Http(
            "GET", "/v1/agent-states/{agent_id}", "operations", response=pm.AgentRuntimeState
        ),
    ),
    Operation(
        "set_agent_state", rec.AgentStateBody, Scope.WRITE, "Set an agent's runtime state",
        rec.record_json,
        invoke=rec.set_agent_state, policy=SELF,
        http=Http(
            "PUT", "/v1/agent-states/{agent_id}", "operations", response=pm.AgentRuntimeState,
            body="AgentStateBody",
        ),
    ),
    Operation(
        "settings", rec.SettingsParams, Scope.READ, "Runtime settings (humans and admins)",
        rec.records_json("settings"),
        invoke=rec.settings, policy=TENANT,
        http=Http("GET", "/v1/settings", "operations", response=rec.SettingsOut),
    ),
    Operation(
        "setting", rec.SettingParams, Scope.READ, "One runtime setting (humans and admins)",
        rec.record_json,
        invoke=rec.setting, policy=TENANT,
        http=Http("GET", "/v1/settings/{namespace}/{key}", "operations", response=pm.Setting),
    ),
    Operation(
        "put_setting", rec.SettingBody, Scope.ADMIN, "Set one runtime setting (admin)",
        rec.record_json,
        invoke=rec.put_setting, policy=TENANT,
        http=Http(
            "PUT", "/v1/settings/{namespace}/{key}", "operations", response=pm.Setting,
            body="SettingBody",
        ),
    ),
    Operation(
        "delete_setting", rec.SettingParams, Scope.ADMIN, "Delete one runtime setting (admin)",
        _field("deleted"),
        invoke=rec.delete_setting, policy=TENANT,
        http=Http("DELETE", "/v1/settings/{namespace}/{key}", "operations", response=rs.DeletedOut),
    ),
)  # fmt: skip


def operation_table(extra: Iterable[Operation] = ()) -> dict[str, Operation]:
    """The operations by name, plus ``extra`` ones (which may not reuse a name)."""
    table = {op.name: op for op in OPERATIONS}
    for op in extra:
        if op.name in table:
            msg = f"operation {op.name!r} is declared twice"
            raise MemoryValidationError(msg)
        table[op.name] = op
    return table


_BY_NAME = operation_table()


def get_operation(name: str) -> Operation:
    """The declared operation called ``name``.

    Raises:
        MemoryValidationError: no operation has that name.
    """
    found = _BY_NAME.get(name)
    if found is None:
        known = ", ".join(sorted(_BY_NAME))
        msg = f"unknown operation {name!r} (known: {known})"
        raise MemoryValidationError(msg)
    return found
