"""Request and response bodies of the REST API (they make the OpenAPI document and its examples).

Bodies forbid unknown fields, so a misspelt option is a 422 instead of being silently ignored.
Limits here are the wire limits; the service and the stores validate content again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.injection.context import CONTEXT_MIN_RELEVANCE
from memvault.models import ChatMessage, MemoryCategory

__all__ = [
    "AddBody",
    "AddManyBody",
    "AgentsOut",
    "ArchiveBody",
    "ArchiveOut",
    "ArchivedOut",
    "AuditOut",
    "ConsolidateBody",
    "ContextBody",
    "ContextOut",
    "CountOut",
    "DeletedOut",
    "EntriesOut",
    "EntryOut",
    "ErrorOut",
    "IdOut",
    "IdsOut",
    "ImportBody",
    "ImportOut",
    "MemoriesOut",
    "PublishBody",
    "RestoreBody",
    "RetractedOut",
    "SearchBody",
    "SessionBody",
    "SessionOut",
    "SessionsOut",
    "SharedSearchBody",
    "StoredOut",
    "SweepBody",
    "SweepOut",
]

AgentId = Field(min_length=1, max_length=200, examples=["dev-1"])
_Body = ConfigDict(extra="forbid")


class ErrorDetail(BaseModel):
    """What went wrong: a stable machine code and a human message."""

    code: str = Field(examples=["not_found"])
    message: str = Field(examples=["memory 01... not found for agent 'dev-1'"])


class ErrorOut(BaseModel):
    """Every error response has this body."""

    error: ErrorDetail


class EntryOut(BaseModel):
    """A memory as JSON (``MemoryEntry.to_json``)."""

    model_config = ConfigDict(extra="allow")

    id: str
    agent_id: str
    category: MemoryCategory
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    created_at: datetime
    relevance_score: float | None = None


class AddBody(BaseModel):
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

    agent_id: str = AgentId
    content: str = Field(min_length=1, max_length=100_000)
    category: MemoryCategory = MemoryCategory.SEMANTIC
    tags: list[str] = Field(default_factory=list, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    expires_at: datetime | None = None
    supersedes: str | None = None
    label: str | None = Field(default=None, max_length=200)
    source: str | None = Field(default=None, max_length=200)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    dedup: bool | None = None
    admission: bool = Field(
        default=False, description="Run admission control; a low-value text is rejected."
    )


class StoredOut(BaseModel):
    """The id that now holds the memory and what the write did."""

    id: str | None = Field(examples=["01a204f6-3f8c-7000-97c6-5989b26e79e2"])
    decision: str = Field(examples=["add"], description="add, noop, supersede or reject")
    reason: str = Field(examples=["new"])
    detail: dict[str, Any] = Field(
        default_factory=dict,
        description="The whole write decision (duplicate_of, old_id, detected, scores...).",
    )


class AddManyItem(BaseModel):
    """One item of a batch (``add``'s fields without ``agent_id``)."""

    model_config = _Body

    content: str = Field(min_length=1, max_length=100_000)
    category: MemoryCategory = MemoryCategory.SEMANTIC
    tags: list[str] = Field(default_factory=list, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    expires_at: datetime | None = None
    supersedes: str | None = None
    label: str | None = Field(default=None, max_length=200)
    source: str | None = Field(default=None, max_length=200)
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class AddManyBody(BaseModel):
    """Many memories for one agent: one embedding batch, one transaction."""

    model_config = _Body

    agent_id: str = AgentId
    items: list[AddManyItem] = Field(min_length=1, max_length=1000)
    dedup: bool | None = None


class IdOut(BaseModel):
    """The id of a created object."""

    id: str


class IdsOut(BaseModel):
    """Ids in input order."""

    ids: list[str]


class SearchBody(BaseModel):
    """A hybrid search of one agent's memories."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"agent_id": "dev-1", "query": "which web framework?", "limit": 5}]
        },
    )

    agent_id: str = AgentId
    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=10, ge=1, le=100)
    categories: list[MemoryCategory] | None = None
    tags: list[str] | None = Field(default=None, max_length=64)
    since: datetime | None = None
    until: datetime | None = None
    as_of: datetime | None = None
    include_shared: bool = False
    include_superseded: bool = False
    min_relevance: float = Field(default=0.0, ge=0.0, le=1.0)
    explain: bool = False


class EntriesOut(BaseModel):
    """Search results, best first."""

    results: list[EntryOut]


class MemoriesOut(BaseModel):
    """A page of memories, newest first."""

    memories: list[EntryOut]


class CountOut(BaseModel):
    """How many memories match."""

    count: int


class DeletedOut(BaseModel):
    """How many memories were deleted."""

    deleted: int


class ContextBody(BaseModel):
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
    query: str = Field(min_length=1, max_length=10_000)
    token_budget: int = Field(default=800, ge=1, le=200_000)
    limit: int = Field(default=20, ge=1, le=100)
    categories: list[MemoryCategory] | None = None
    role: Literal["system", "user"] = "system"
    mmr: bool = False
    # Nothing is injected when the best memory's calibrated relevance is below this.
    min_relevance: float = Field(default=CONTEXT_MIN_RELEVANCE, ge=0.0, le=1.0)


class ContextOut(BaseModel):
    """The packed context: text, token estimate, chat messages and the entries used."""

    text: str
    tokens: int
    role: str
    messages: list[dict[str, str]]
    entries: list[EntryOut]


class ImportBody(BaseModel):
    """Exported memories to import (idempotent: known ids are skipped)."""

    model_config = _Body

    items: list[dict[str, Any]] = Field(max_length=100_000)
    agent_id: str | None = Field(default=None, min_length=1, max_length=200)


class ImportOut(BaseModel):
    """How many memories were added."""

    added: int


class ConsolidateBody(BaseModel):
    """Consolidate one agent's memories (originals go to the archive)."""

    model_config = _Body

    agent_id: str = AgentId
    strategy: Literal["simple", "dual_mode", "llm", "extract"] = "simple"
    dry_run: bool = False
    reason: str | None = Field(default=None, max_length=500)


class SweepBody(BaseModel):
    """Enforce retention now (one agent, or the whole tenant)."""

    model_config = _Body

    agent_id: str | None = Field(default=None, min_length=1, max_length=200)


class SweepOut(BaseModel):
    """Original id -> archive id, per reason."""

    expired: dict[str, str]
    evicted: dict[str, str]


class ArchiveBody(BaseModel):
    """Move memories to the archive by request (restorable by id)."""

    model_config = _Body

    agent_id: str = AgentId
    ids: list[str] = Field(min_length=1, max_length=1000)
    reason: str = Field(default="archive", min_length=1, max_length=100)


class ArchiveOut(BaseModel):
    """Original id -> archive id of every memory moved (unknown ids are left out)."""

    index: dict[str, str]


class ArchivedOut(BaseModel):
    """Archived memories, newest first."""

    archived: list[dict[str, Any]]


class RestoreBody(BaseModel):
    """Restore an archived memory under its original id."""

    model_config = _Body

    agent_id: str = AgentId
    reason: str | None = Field(default=None, max_length=500)


class AuditOut(BaseModel):
    """Audit records, oldest first."""

    records: list[dict[str, Any]]


class PublishBody(BaseModel):
    """Shared knowledge authored by ``agent_id``, visible to every agent of the tenant."""

    model_config = _Body

    agent_id: str = AgentId
    content: str = Field(min_length=1, max_length=100_000)
    category: MemoryCategory = MemoryCategory.SEMANTIC
    tags: list[str] = Field(default_factory=list, max_length=64)
    metadata: dict[str, Any] = Field(default_factory=dict)


class SharedSearchBody(BaseModel):
    """A search of the tenant's shared knowledge."""

    model_config = _Body

    query: str = Field(min_length=1, max_length=10_000)
    limit: int = Field(default=10, ge=1, le=100)
    exclude_agent: str | None = Field(default=None, min_length=1, max_length=200)


class RetractedOut(BaseModel):
    """Whether the shared entry was retracted."""

    retracted: bool


class SessionBody(BaseModel):
    """A session's whole message history (replaces the stored one)."""

    model_config = _Body

    agent_id: str = AgentId
    messages: list[ChatMessage] = Field(max_length=10_000)


class SessionOut(BaseModel):
    """One session."""

    session_id: str
    agent_id: str
    created_at: datetime
    updated_at: datetime
    message_count: int
    messages: list[dict[str, Any]] | None = None


class SessionsOut(BaseModel):
    """The agent's sessions, most recent first (without their messages)."""

    sessions: list[SessionOut]


class AgentsOut(BaseModel):
    """Agent ids with memories."""

    agents: list[str]
