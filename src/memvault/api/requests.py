"""The inputs of every operation, declared once (pydantic models with the wire limits).

A ``...Body`` model is the JSON body of a REST route (and the arguments of its MCP tool and CLI
command); a ``...Params`` model holds the path and query parameters of a route without a body.
Every model forbids unknown fields, so a misspelt option is an error instead of being silently
ignored. Limits here are the wire limits of every interface; the stores validate content again.
The operation table (:mod:`memvault.api.operations`) says which model each operation takes.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from memvault.consolidation import ConsolidationStrategy
from memvault.finetune.config import FineTunePlan
from memvault.injection.context import CONTEXT_MIN_RELEVANCE
from memvault.learning.models import (
    ApprovalStatus,
    OrgFactKind,
    Seniority,
    ToolCallRecord,
)
from memvault.models import ChatMessage, MemoryCategory

__all__ = [
    "AddBody",
    "AddManyBody",
    "AddManyItem",
    "AgentsParams",
    "ApprovalParams",
    "ApprovalsParams",
    "ArchiveBody",
    "ArchivedParams",
    "AskBody",
    "AuditParams",
    "CheckpointRollbackBody",
    "ClearParams",
    "CompactBody",
    "ConsolidateBody",
    "ContextBody",
    "ConversationAppendBody",
    "ConversationBackfillBody",
    "ConversationContextParams",
    "ConversationMessageIn",
    "ConversationMessagesParams",
    "ConversationStatusParams",
    "ConversationsParams",
    "CountParams",
    "DecideBody",
    "DeleteParams",
    "DeleteSessionParams",
    "DistillationBody",
    "EpisodeBody",
    "EvolveBody",
    "ExportParams",
    "FineTuneBody",
    "FineTuneCancelBody",
    "FineTuneResumeParams",
    "FineTuneRunsParams",
    "FineTuneStatusParams",
    "GetParams",
    "HistoryParams",
    "ImportBody",
    "LearnBody",
    "ListParams",
    "MemoryFields",
    "MessageIn",
    "MessagesBody",
    "NoParams",
    "OrgPoliciesParams",
    "OrgSearchBody",
    "OrgWriteBody",
    "ProfileBody",
    "ProfileParams",
    "ProfilesParams",
    "PruneProceduralBody",
    "PublishBody",
    "Request",
    "RestoreBody",
    "RetractParams",
    "SearchBody",
    "SessionBody",
    "SessionParams",
    "SessionsParams",
    "SharedSearchBody",
    "SkillsParams",
    "StatsParams",
    "SweepBody",
    "TurnIn",
    "UpdateBody",
    "WorkingNoteBody",
    "WorkingParams",
]

_AGENT = "The agent whose memories to use."
_REASON = "Why (recorded in the audit log with the caller)."
_MEMORY_ID = "The memory's id, as a store or a search returned it."
_SESSION_ID = "The session's id."

AgentId = Field(min_length=1, max_length=200, examples=["dev-1"], description=_AGENT)


def _tags(default: Any) -> Any:
    return Field(
        default=default,
        max_length=64,
        description="Labels to filter on later (at most 64).",
    )


def _json_object(value: Any) -> Any:
    """A JSON object given as its text (a query parameter) parsed; anything else as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            msg = f"not a JSON object: {exc.msg}"
            raise ValueError(msg) from None
    return value


MetadataFilters = Annotated[dict[str, Any] | None, BeforeValidator(_json_object)]
"""Metadata filters (:func:`memvault.models.parse_filters`), as an object or its JSON text."""


def _scope(what: str) -> Any:
    return Field(
        default=None,
        min_length=1,
        max_length=200,
        description=f"The {what} this memory belongs to (a metadata key; filterable).",
    )


class Request(BaseModel):
    """Base of every operation input: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


# -- memories ---------------------------------------------------------------------------------


class _AgentBound(Request):
    """A request for one agent's memories (``agent_id`` first in every schema)."""

    agent_id: str = AgentId


class MemoryFields(Request):
    """The fields of one memory to store, declared once for ``add`` and each batch item.

    What only one of them has is declared there: ``confidence`` on a batch item (the batch
    path takes it per item, ``AsyncMemory.write`` has no such parameter), the scope ids,
    ``dedup`` and ``admission`` on ``add`` (a batch item carries no scope ids: see
    ``memvault._inputs._ADD_KEYS``).
    """

    content: str = Field(
        min_length=1,
        max_length=100_000,
        description="The memory itself, as a self-contained sentence.",
    )
    category: MemoryCategory = Field(
        default=MemoryCategory.SEMANTIC,
        description=(
            "The kind of memory (semantic: facts and preferences; episodic: events; "
            "procedural: how-tos; social: people; working: short-lived notes)."
        ),
    )
    tags: list[str] = _tags([])
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form JSON values stored with the memory."
    )
    created_at: datetime | None = Field(default=None, description="When it happened.")
    expires_at: datetime | None = Field(default=None, description="When it is forgotten.")
    supersedes: str | None = Field(default=None, description="The id of the memory it replaces.")
    label: str | None = Field(default=None, max_length=200, description="A block label.")
    source: str | None = Field(default=None, max_length=200, description="Where it came from.")
    importance: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How much it matters (0-1)."
    )


# Bases in this order put agent_id first, then the memory's fields (pydantic collects the
# fields of the bases from the last one to the first).
class AddBody(MemoryFields, _AgentBound):
    """One memory to store for ``agent_id`` (the write path deduplicates it)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "agent_id": "dev-1",
                    "content": "Prefers Litestar over Flask",
                    "category": "semantic",
                    "tags": ["preference"],
                }
            ]
        },
    )

    dedup: bool | None = Field(default=None, description="Override the store's dedup setting.")
    admission: bool = Field(
        default=False, description="Run admission control; a low-value text is rejected."
    )
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


class AddManyItem(MemoryFields):
    """One item of a batch (``add``'s memory fields without ``agent_id``)."""

    confidence: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How sure the source is (0-1)."
    )


class AddManyBody(Request):
    """Many memories for one agent: one embedding batch, one transaction."""

    agent_id: str = AgentId
    items: list[AddManyItem] = Field(
        min_length=1, max_length=1000, description="The memories, stored in this order."
    )
    dedup: bool | None = Field(default=None, description="Override the store's dedup setting.")


class MessageIn(BaseModel):
    """One chat message, OpenAI-style (other keys such as ``tool_calls`` are ignored)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "assistant", "system", "developer", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = Field(default=None, max_length=200)
    created_at: datetime | None = None


class MessagesBody(Request):
    """A conversation to remember: each user/assistant turn, or the facts it states."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "agent_id": "dev-1",
                    "session_id": "s-1",
                    "messages": [
                        {"role": "user", "content": "I moved to Lyon last month."},
                        {"role": "assistant", "content": "Noted!"},
                    ],
                }
            ]
        },
    )

    agent_id: str = AgentId
    messages: list[MessageIn] = Field(
        min_length=1, max_length=1000, description="The messages, oldest first."
    )
    infer: bool = Field(
        default=False,
        description="Store the facts the conversation states (LLM-extracted) instead of turns.",
    )
    tags: list[str] = _tags([])
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form JSON values stored with each memory."
    )
    created_at: datetime | None = Field(
        default=None, description="When the conversation happened (a message's own wins)."
    )
    dedup: bool | None = Field(default=None, description="Override the store's dedup setting.")
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


class ListParams(Request):
    """A page of one agent's memories, newest first."""

    agent_id: str = AgentId
    category: MemoryCategory | None = Field(default=None, description="Only this kind.")
    label: str | None = Field(default=None, max_length=200, description="Only this block label.")
    tags: list[str] | None = _tags(None)
    limit: int = Field(default=20, ge=1, le=1000, description="How many at most.")
    offset: int = Field(
        default=0, ge=0, le=10_000_000, description="How many to skip (for the next page)."
    )
    include_superseded: bool = Field(default=False, description="Also superseded memories.")
    filters: MetadataFilters = Field(
        default=None,
        description=(
            'Metadata filters, e.g. {"project": "x", "priority": {"gte": 2}} '
            "(a JSON object; in a query string, its JSON text)."
        ),
    )
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


class ClearParams(Request):
    """Delete every memory of an agent (or of one category)."""

    agent_id: str = AgentId
    category: MemoryCategory | None = Field(default=None, description="Only this kind.")
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


class GetParams(Request):
    """One memory by id."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId


class DeleteParams(Request):
    """Delete one memory by id."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


class UpdateBody(Request):
    """A new version of a memory: the fields to change (the others are kept)."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId
    content: str | None = Field(
        default=None, min_length=1, max_length=100_000, description="The new text."
    )
    category: MemoryCategory | None = Field(default=None, description="The new kind.")
    tags: list[str] | None = _tags(None)
    metadata: dict[str, Any] | None = Field(
        default=None, description="The new metadata (replaces the old)."
    )
    label: str | None = Field(default=None, max_length=200, description="The new block label.")
    importance: float | None = Field(
        default=None, ge=0.0, le=1.0, description="How much it matters (0-1)."
    )
    expires_at: datetime | None = Field(default=None, description="When it is forgotten.")
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


class HistoryParams(Request):
    """Every version of a memory (give any version's id)."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId


class CountParams(Request):
    """Count one agent's memories."""

    agent_id: str = AgentId
    category: MemoryCategory | None = Field(default=None, description="Only this kind.")
    filters: MetadataFilters = Field(
        default=None,
        description=(
            'Metadata filters, e.g. {"project": "x", "priority": {"gte": 2}} '
            "(a JSON object; in a query string, its JSON text)."
        ),
    )
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


# -- retrieval --------------------------------------------------------------------------------


class SearchBody(Request):
    """A hybrid search of one agent's memories."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"agent_id": "dev-1", "query": "which web framework?", "limit": 5}]
        },
    )

    agent_id: str = AgentId
    query: str = Field(
        min_length=1,
        max_length=10_000,
        description="What to look for, in a few words or a question.",
    )
    limit: int = Field(default=10, ge=1, le=100, description="How many results at most.")
    categories: list[MemoryCategory] | None = Field(
        default=None, description="Only memories of these kinds (default: all)."
    )
    tags: list[str] | None = _tags(None)
    since: datetime | None = Field(default=None, description="Only memories from this moment.")
    until: datetime | None = Field(default=None, description="Only memories up to this moment.")
    as_of: datetime | None = Field(
        default=None, description="Search the store as it was at this moment."
    )
    asked_at: datetime | None = Field(
        default=None,
        description=(
            'When the question is asked: "two weeks ago" in the query counts back from it '
            "(default: as_of, else now). Hides nothing."
        ),
    )
    include_shared: bool = Field(
        default=False, description="Also search the shared knowledge of the organisation."
    )
    include_superseded: bool = Field(default=False, description="Also superseded memories.")
    min_relevance: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Drop hits below this calibrated relevance."
    )
    explain: bool = Field(default=False, description="Attach each hit's score breakdown.")
    preset: str | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="A named retrieval preset (default, fast, legacy, hybrid, bm25, dense).",
    )
    filters: MetadataFilters = Field(
        default=None,
        description=(
            'Metadata filters, e.g. {"project": "x", "priority": {"gte": 2}} '
            "(a JSON object; in a query string, its JSON text)."
        ),
    )
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


class ContextBody(Request):
    """Relevant memories packed into a token budget, formatted for a prompt."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"agent_id": "dev-1", "query": "implement the auth endpoint", "token_budget": 800}
            ]
        },
    )

    agent_id: str = AgentId
    query: str = Field(min_length=1, max_length=10_000, description="The task at hand.")
    token_budget: int = Field(default=800, ge=1, le=200_000, description="Tokens to fill.")
    limit: int = Field(default=20, ge=1, le=100, description="Candidates to pack at most.")
    categories: list[MemoryCategory] | None = Field(
        default=None, description="Only memories of these kinds (default: all)."
    )
    role: Literal["system", "user"] = Field(default="system", description="The message role.")
    mmr: bool = Field(default=False, description="Diversify the packed memories (MMR).")
    asked_at: datetime | None = Field(
        default=None,
        description='When the task is asked: "two weeks ago" in it counts back from it.',
    )
    # Nothing is injected when the best memory's calibrated relevance is below this.
    min_relevance: float = Field(
        default=CONTEXT_MIN_RELEVANCE,
        ge=0.0,
        le=1.0,
        description="Inject nothing when the best memory's relevance is below this.",
    )
    filters: MetadataFilters = Field(
        default=None, description='Metadata filters, e.g. {"project": "x"}.'
    )
    user_id: str | None = _scope("user")
    session_id: str | None = _scope("session or conversation")
    run_id: str | None = _scope("run")
    namespace: str | None = _scope("namespace")


# -- bulk and lifecycle -----------------------------------------------------------------------


class ExportParams(Request):
    """Export one agent's memories (or the whole tenant's)."""

    agent_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="One agent (default: every one)."
    )


class ImportBody(Request):
    """Exported memories to import (idempotent: known ids are skipped)."""

    items: list[dict[str, Any]] = Field(max_length=100_000, description="Exported memories.")
    agent_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="Import as this agent."
    )


class ConsolidateBody(Request):
    """Consolidate one agent's memories (originals go to the archive)."""

    agent_id: str = AgentId
    strategy: ConsolidationStrategy | None = Field(
        default=None,
        description=(
            "How to consolidate (extract: InitRunner's episodes -> facts); default: the "
            "configured strategy."
        ),
    )
    dry_run: bool = Field(
        default=False,
        description="Plan only; change nothing (the groups list what each new memory would merge).",
    )
    reason: str | None = Field(default=None, max_length=500, description=_REASON)
    min_age_days: float | None = Field(
        default=None,
        ge=0.0,
        le=36_500.0,
        description=(
            "Merge only memories at least this many days old; default: the configured "
            "consolidation.min_age_days (30). 0 merges memories of any age."
        ),
    )


class SweepBody(Request):
    """Enforce retention now (one agent, or the whole tenant)."""

    agent_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="One agent (default: every one)."
    )


class ArchivedParams(Request):
    """A page of an agent's archived memories, newest first."""

    agent_id: str = AgentId
    limit: int = Field(default=100, ge=1, le=1000, description="How many at most.")
    offset: int = Field(default=0, ge=0, le=10_000_000, description="How many to skip.")


class ArchiveBody(Request):
    """Move memories to the archive by request (restorable by id)."""

    agent_id: str = AgentId
    ids: list[str] = Field(min_length=1, max_length=1000, description="The memories to move.")
    reason: str = Field(
        default="archive", min_length=1, max_length=100, description="Why they are archived."
    )


class RestoreBody(Request):
    """Restore an archived memory under its original id."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


class AuditParams(Request):
    """Audit records (of one agent and/or memory), oldest first."""

    agent_id: str | None = Field(
        default=None, min_length=1, max_length=200, description="One agent (default: every one)."
    )
    memory_id: str | None = Field(
        default=None, min_length=1, max_length=100, description="One memory."
    )
    limit: int = Field(default=100, ge=1, le=10_000, description="How many at most.")


class AgentsParams(Request):
    """Agent ids with memories (no parameters)."""


class StatsParams(Request):
    """Counts of the tenant's store (no parameters)."""


# -- shared knowledge -------------------------------------------------------------------------


class PublishBody(Request):
    """Shared knowledge authored by ``agent_id``, visible to every agent of the tenant."""

    agent_id: str = AgentId
    content: str = Field(
        min_length=1, max_length=100_000, description="The knowledge to share, self-contained."
    )
    category: MemoryCategory = Field(
        default=MemoryCategory.SEMANTIC, description="The kind of knowledge."
    )
    tags: list[str] = _tags([])
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Free-form JSON values stored with it."
    )
    scope: Literal["shared", "org"] = Field(
        default="shared",
        description=(
            "shared: the tenant's shared knowledge; org: an org fact (write access by the "
            "author's seniority, policies are human-only)."
        ),
    )
    kind: OrgFactKind | None = Field(
        default=None,
        description="The org fact's kind (scope org; default procedure or convention).",
    )


class SharedSearchBody(Request):
    """A search of the tenant's shared knowledge."""

    query: str = Field(
        min_length=1,
        max_length=10_000,
        description="What to look for, in a few words or a question.",
    )
    limit: int = Field(default=10, ge=1, le=100, description="How many results at most.")
    exclude_agent: str | None = Field(
        default=None, min_length=1, max_length=200, description="Leave out what it published."
    )


class RetractParams(Request):
    """Retract shared knowledge the agent published."""

    memory_id: str = Field(min_length=1, description=_MEMORY_ID)
    agent_id: str = AgentId
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


# -- sessions ---------------------------------------------------------------------------------


class SessionBody(Request):
    """A session's whole message history (replaces the stored one)."""

    session_id: str = Field(min_length=1, description=_SESSION_ID)
    agent_id: str = AgentId
    messages: list[ChatMessage] = Field(max_length=10_000, description="The messages, in order.")


class SessionsParams(Request):
    """The agent's sessions, most recent first."""

    agent_id: str = AgentId
    limit: int | None = Field(default=None, ge=1, le=1000, description="How many at most.")


class SessionParams(Request):
    """One session with its messages (``latest`` for the most recent)."""

    session_id: str = Field(min_length=1, description=_SESSION_ID)
    agent_id: str = AgentId


class DeleteSessionParams(Request):
    """Delete one session."""

    session_id: str = Field(min_length=1, description=_SESSION_ID)
    agent_id: str = AgentId


# -- conversations (issue 18: seed 004's message store) ---------------------------------------

_CONVERSATION_ID = "The session whose conversation this is (one conversation per session)."


def _conversation_session() -> Any:
    return Field(min_length=1, max_length=200, description=_CONVERSATION_ID)


class ConversationMessageIn(Request):
    """One turn to append, with who may see it (seed 004's ``MessageMetadata``)."""

    role: Literal["system", "user", "assistant", "tool"] = Field(
        description="Who spoke: user, assistant, system or tool (a tool result)."
    )
    content: str = Field(min_length=1, max_length=100_000, description="What was said.")
    name: str | None = Field(
        default=None, min_length=1, max_length=200, description="The speaker's or tool's name."
    )
    agent_visible: bool = Field(
        default=True, description="Sent to the model (false: e.g. a notice shown to the user)."
    )
    user_visible: bool = Field(
        default=True, description="Shown to the user (false: e.g. a tool result, a hint)."
    )
    focus_pinned: bool = Field(
        default=False, description="Never compacted: always kept verbatim in the agent's view."
    )


class ConversationAppendBody(Request):
    """Turns to append to a session's conversation, each stored at once (never rewritten)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "agent_id": "dev-1",
                    "session_id": "ticket-4711",
                    "messages": [{"role": "user", "content": "Deploy v2.3 to staging."}],
                }
            ]
        },
    )

    session_id: str = _conversation_session()
    agent_id: str = AgentId
    messages: list[ConversationMessageIn] = Field(
        min_length=1, max_length=1000, description="The turns, oldest first."
    )


class ConversationMessagesParams(Request):
    """A page of a conversation's messages, in conversation order, as one reader sees them."""

    session_id: str = _conversation_session()
    agent_id: str = AgentId
    view: Literal["agent", "user", "all"] = Field(
        default="agent",
        description=(
            "agent: what the model is sent (summaries in place of compacted turns); user: the "
            "transcript a person sees (humans and admins); all: every row (admins)."
        ),
    )
    limit: int = Field(default=100, ge=1, le=1000, description="How many at most.")
    offset: int = Field(
        default=0, ge=0, le=10_000_000, description="How many to skip (for the next page)."
    )


class ConversationsParams(Request):
    """A page of an agent's conversations, latest append first."""

    agent_id: str = AgentId
    limit: int = Field(default=20, ge=1, le=1000, description="How many at most.")
    offset: int = Field(
        default=0, ge=0, le=10_000_000, description="How many to skip (for the next page)."
    )
    include_archived: bool = Field(
        default=False, description="Also conversations that pruning archived."
    )


class ConversationContextParams(Request):
    """A conversation's context window: its pressure, compaction state and agent view."""

    session_id: str = _conversation_session()
    agent_id: str = AgentId
    include_messages: bool = Field(
        default=True, description="Include the agent view's messages (what the model is sent)."
    )


class CompactBody(Request):
    """Relieve a conversation's context pressure now (what runs before each LLM call)."""

    session_id: str = _conversation_session()
    agent_id: str = AgentId
    summariser: Literal["llm", "extractive"] = Field(
        default="llm",
        description=(
            "llm: the server's LLM writes the anchored summaries and probe questions (an "
            "error when the server has none); extractive: the deterministic extractor."
        ),
    )


class ConversationStatusParams(Request):
    """The tenant's conversation store counts and its embedding queue (not for agents)."""


class ConversationBackfillBody(Request):
    """Embed every stored message that has no vector yet, now (admin)."""


# -- learning (issue 16) ------------------------------------------------------------------------


class LearnBody(Request):
    """Report one finished task so the agent (and its peers) can learn from it."""

    agent_id: str = AgentId
    success: bool = Field(description="Whether the task succeeded.")
    task_id: str | None = Field(default=None, max_length=200, description="The task's id.")
    task_type: str = Field(
        default="task",
        min_length=1,
        max_length=200,
        description="What kind of task (failures are grouped by it across agents).",
    )
    description: str = Field(default="", max_length=4000, description="What the task was.")
    error: str | None = Field(
        default=None, max_length=8000, description="The error (secrets are stripped)."
    )
    error_category: str | None = Field(
        default=None, max_length=100, description="A category grouping the failure (optional)."
    )
    tool_calls: list[ToolCallRecord] = Field(
        default_factory=list,
        max_length=500,
        description='Tool calls made, in order: [{"name": ..., "ok": true}, ...].',
    )
    retry_count: int = Field(default=0, ge=0, description="Retries during the task.")
    turn_count: int = Field(default=0, ge=0, description="Turns the task took.")
    quality_score: float | None = Field(
        default=None, ge=0.0, le=10.0, description="Quality of a successful task (0-10)."
    )
    applied_skills: list[str] = Field(
        default_factory=list,
        max_length=100,
        description="Ids of injected skills the agent used (counts their applications).",
    )
    metadata: dict[str, Any] | None = Field(default=None, description="Extra task metadata.")


class ProfileBody(Request):
    """Set an agent's role, department and seniority."""

    agent_id: str = AgentId
    role: str | None = Field(default=None, max_length=100, description="The agent's role.")
    department: str | None = Field(
        default=None, max_length=100, description="The agent's department."
    )
    seniority: Seniority = Field(default=Seniority.MID, description="The agent's seniority.")


class ProfileParams(Request):
    """One agent's profile."""

    agent_id: str = AgentId


class ProfilesParams(Request):
    """Every agent profile of the tenant."""


class ApprovalsParams(Request):
    """Items of the approval queue, newest first."""

    status: ApprovalStatus | None = Field(default=None, description="Only items of this status.")
    limit: int = Field(default=100, ge=1, le=1000, description="At most this many.")


class ApprovalParams(Request):
    """One item of the approval queue."""

    item_id: str = Field(min_length=1, max_length=100, description="The approval item's id.")


class DecideBody(Request):
    """Approve or reject a queued proposal (human and admin callers only)."""

    item_id: str = Field(min_length=1, max_length=100, description="The approval item's id.")
    reason: str | None = Field(default=None, max_length=500, description=_REASON)


class EvolveBody(Request):
    """Run one skill-evolver cycle now."""

    force: bool = Field(
        default=True, description="Run even when procedural.evolver.enabled is false."
    )


class PruneProceduralBody(Request):
    """Prune one agent's procedural lessons (pruned ones go to the archive)."""

    agent_id: str = AgentId


class OrgPoliciesParams(Request):
    """The organisation's core policies."""


class OrgSearchBody(Request):
    """Search the organisation's extended knowledge (ADRs, procedures, conventions, skills)."""

    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    kinds: list[OrgFactKind] | None = Field(default=None, description="Only these kinds.")
    limit: int | None = Field(default=None, ge=1, le=100, description="At most this many.")


class OrgWriteBody(Request):
    """Append one org fact (append-only; write access by kind and seniority)."""

    kind: OrgFactKind = Field(description="What kind of fact.")
    content: str = Field(min_length=1, max_length=8000, description="The fact.")
    tags: list[str] = _tags([])
    supersedes: str | None = Field(
        default=None, min_length=1, max_length=100, description="The org fact it replaces."
    )
    agent_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="The authoring agent (agent callers: themselves).",
    )


class SkillsParams(Request):
    """The org skill pool, with application counts."""

    include_superseded: bool = Field(
        default=False, description="Include superseded skills (tombstones)."
    )


# -- Search-and-Ask, automatic capture, working memory ----------------------------------------

_TASK_ID = "The task whose scratchpad this is (working memory is per agent and task)."


class AskBody(Request):
    """A search that asks the server's LLM whether the memories answer it, and searches again."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"agent_id": "dev-1", "query": "which database did we pick?"}]
        },
    )

    agent_id: str = AgentId
    query: str = Field(min_length=1, max_length=2000, description="The question.")
    limit: int = Field(default=5, ge=1, le=100, description="Results to return at most.")
    categories: list[MemoryCategory] | None = Field(
        default=None, description="Only memories of these kinds (default: all)."
    )
    max_rounds: int = Field(
        default=2, ge=1, le=5, description="Reformulated searches after the first, at most."
    )


class EpisodeBody(Request):
    """A run's result summary to capture as an episode (InitRunner's auto-capture)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "agent_id": "ops-bot",
                    "summary": "Nightly sync imported 1,204 invoices; 3 were rejected.",
                    "trigger_type": "cron",
                }
            ]
        },
    )

    agent_id: str = AgentId
    summary: str = Field(min_length=1, max_length=32_000, description="What the run achieved.")
    trigger_type: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="What started the run: cron, file_watch, webhook ... (metadata key).",
    )
    category: str = Field(
        default="autonomous_run",
        min_length=1,
        max_length=100,
        description="The episode's label (InitRunner's category).",
    )
    metadata: dict[str, Any] | None = Field(default=None, description="Extra metadata.")


class TurnIn(Request):
    """One turn of a task: its tokens and the tools it called."""

    tokens: int = Field(default=0, ge=0, description="Tokens the turn used.")
    tool_calls: list[str] = Field(
        default_factory=list, max_length=500, description="Tool names called, in order."
    )


class DistillationBody(Request):
    """A finished task's trajectory, captured as a ``distillation`` episode."""

    agent_id: str = AgentId
    task_id: str = Field(min_length=1, max_length=200, description="The task's id.")
    outcome: str = Field(
        min_length=1, max_length=200, description="How it ended: completed, error, timeout ..."
    )
    turns: list[TurnIn] = Field(default_factory=list, max_length=10_000, description="Turns.")
    error: str | None = Field(default=None, max_length=8000, description="The error, if any.")
    created_at: datetime | None = Field(default=None, description="When the task ended.")


class WorkingNoteBody(Request):
    """A note for an agent's working memory (in process, never persisted)."""

    task_id: str = Field(min_length=1, max_length=200, description=_TASK_ID)
    agent_id: str = AgentId
    content: str = Field(min_length=1, max_length=32_000, description="The note.")
    token_budget: int | None = Field(
        default=None, ge=1, le=100_000, description="Budget of a new scratchpad (tokens)."
    )


class WorkingParams(Request):
    """An agent's working memory for one task."""

    task_id: str = Field(min_length=1, max_length=200, description=_TASK_ID)
    agent_id: str = AgentId


# -- embedder fine-tuning (admin) ---------------------------------------------------------------

_CONFIRM = "Must be true: the change is meant (it is destructive and audited)."


_PLAN_FIELDS = {
    "source_dir": "Directory of the organisation's documents (.md, .txt, .rst) on the server.",
    "output_dir": "Checkpoint registry to write to (default: fine_tune.checkpoint_path).",
    "pairs_file": "JSON-lines file of {query, passage} pairs on the server (skips the LLM).",
    "base_model": "The embedder to fine-tune (default: fine_tune.base_model).",
    "trainer": "adapter (light, CPU), biencoder (needs torch) or auto.",
    "queries_per_passage": "Synthetic queries the LLM writes per passage.",
    "max_passages": "Use at most this many passages.",
    "query_max_tokens": "Token cap of a query.",
    "passage_max_tokens": "Token cap of a passage.",
    "hard_negatives": "Hard negatives mined per query with the base model.",
    "epochs": "Training epochs.",
    "learning_rate": "Learning rate of the bi-encoder trainer.",
    "adapter_learning_rate": "Learning rate of the adapter trainer.",
    "temperature": "InfoNCE temperature (tau).",
    "batch_size": "Training batch size.",
    "validation_fraction": "Share of pairs held out to evaluate checkpoint versus base.",
    "llm_max_tokens": "Token cap of one LLM answer.",
    "llm_max_input_chars": "Characters of a passage the LLM sees (longer ones are truncated).",
    "deploy": "Make the checkpoint the active embedder when the run ends.",
    "require_improvement": "Deploy only when the checkpoint beats the base model.",
    "seed": "Random seed (splits, sampling, initialisation).",
}


def _describe_plan(schema: dict[str, Any]) -> None:
    # FineTunePlan's fields carry no descriptions; tool callers and the OpenAPI need them.
    for name, prop in schema.get("properties", {}).items():
        if name in _PLAN_FIELDS:
            prop.setdefault("description", _PLAN_FIELDS[name])


class FineTuneBody(Request, FineTunePlan):
    """A fine-tune plan: the documents or query/passage pairs to train on, and how."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_describe_plan
    )

    def plan(self) -> FineTunePlan:
        """The plan (fields left out stay unset, so the server's configuration fills them)."""
        # This body ran FineTunePlan's validators already: copy the values, keep the set fields.
        values = {name: getattr(self, name) for name in FineTunePlan.model_fields}
        return FineTunePlan.model_construct(_fields_set=set(self.model_fields_set), **values)


class FineTuneResumeParams(Request):
    """Resume a failed or cancelled fine-tune run."""

    run_id: str = Field(min_length=1, max_length=100, description="The run's id.")


class FineTuneStatusParams(Request):
    """The status of one run (default: the active run, else the latest)."""

    run_id: str | None = Field(
        default=None, min_length=1, max_length=100, description="The run's id (default: active)."
    )


class FineTuneRunsParams(Request):
    """A page of fine-tune runs, newest first."""

    limit: int = Field(default=20, ge=1, le=1000, description="At most this many.")
    offset: int = Field(default=0, ge=0, description="Skip this many first.")


class FineTuneCancelBody(Request):
    """Cancel the active fine-tune run (destructive, audited)."""

    confirm: bool = Field(description=_CONFIRM)
    reason: str = Field(min_length=1, max_length=500, description=_REASON)


class CheckpointRollbackBody(Request):
    """Make a checkpoint (``base``: the base model) the active embedder again."""

    checkpoint_id: str = Field(min_length=1, max_length=200, description="The checkpoint's id.")
    confirm: bool = Field(description=_CONFIRM)
    reason: str = Field(min_length=1, max_length=500, description=_REASON)


class NoParams(Request):
    """No input."""
