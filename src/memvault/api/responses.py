"""The outputs of the REST routes (they make the OpenAPI document and its examples).

Each operation in :mod:`memvault.api.operations` names its response model here; the route sends
the JSON its ``render`` function builds, shaped like that model.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memvault.conversation.models import ConversationInfo
from memvault.finetune.config import CheckpointRecord, FineTuneRun
from memvault.learning.models import AgentProfile, ApprovalItem, OrgFact
from memvault.models import MemoryCategory

__all__ = [
    "AgentsOut",
    "ApprovalsOut",
    "ArchiveOut",
    "ArchivedOut",
    "AuditOut",
    "CapturedOut",
    "CheckpointsOut",
    "ClearedOut",
    "ContextOut",
    "ConversationBackfillOut",
    "ConversationsOut",
    "CountOut",
    "DeletedOut",
    "EntriesOut",
    "EntryOut",
    "ErrorOut",
    "FineTuneCancelledOut",
    "FineTuneRunsOut",
    "HistoryOut",
    "IdOut",
    "IdsOut",
    "ImportOut",
    "MemoriesOut",
    "NoteIdOut",
    "OrgFactsOut",
    "ProfilesOut",
    "RetractedOut",
    "SessionOut",
    "SessionsOut",
    "SkillsOut",
    "StoredOut",
    "SweepOut",
    "WorkingNoteOut",
    "WorkingOut",
]


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
    consolidated_into: str | None = Field(
        default=None,
        description=(
            "Set on a memory consolidation merged (its archived copy): the id of the memory "
            "that now holds its content."
        ),
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
    warnings: list[str] = Field(
        default_factory=list,
        description="Advisories that never block a write (e.g. a missing non-inferable tag).",
    )


class IdOut(BaseModel):
    """The id of a created object."""

    id: str


class IdsOut(BaseModel):
    """Ids in input order."""

    ids: list[str]


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


class ContextOut(BaseModel):
    """The packed context: text, token estimate, chat messages and the entries used."""

    text: str
    tokens: int
    role: str
    messages: list[dict[str, str]]
    entries: list[EntryOut]


class ImportOut(BaseModel):
    """How many memories were added."""

    added: int


class SweepOut(BaseModel):
    """Original id -> archive id, per reason."""

    expired: dict[str, str]
    evicted: dict[str, str]


class ArchiveOut(BaseModel):
    """Original id -> archive id of every memory moved (unknown ids are left out)."""

    index: dict[str, str]


class ArchivedOut(BaseModel):
    """Archived memories, newest first."""

    archived: list[dict[str, Any]]


class AuditOut(BaseModel):
    """Audit records, oldest first."""

    records: list[dict[str, Any]]


class RetractedOut(BaseModel):
    """Whether the shared entry was retracted."""

    retracted: bool


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


class HistoryOut(BaseModel):
    """Every version of a memory, oldest first, with the audit records of each."""

    memory_id: str
    versions: list[EntryOut]
    audit: list[dict[str, Any]]


class ApprovalsOut(BaseModel):
    """Items of the approval queue."""

    approvals: list[ApprovalItem]


class ProfilesOut(BaseModel):
    """Agent profiles."""

    profiles: list[AgentProfile]


class OrgFactsOut(BaseModel):
    """Org facts (policies or search results)."""

    facts: list[OrgFact]


class SkillsOut(BaseModel):
    """Skills of the org pool with their lifecycle (application_count, superseded_by...)."""

    skills: list[dict[str, Any]]


class CapturedOut(BaseModel):
    """The captured episode's id; ``captured`` false (id null) when nothing was stored."""

    id: str | None
    captured: bool


class WorkingNoteOut(BaseModel):
    """One note of a working memory."""

    id: str
    content: str
    created_at: datetime
    tokens: int


class WorkingOut(BaseModel):
    """An agent's working memory for one task, and its rendering for a prompt."""

    task_id: str
    token_budget: int
    tokens: int
    dropped: int = Field(description="Notes dropped (oldest first) to stay within the budget.")
    notes: list[WorkingNoteOut]
    text: str


class NoteIdOut(BaseModel):
    """The id of a new working-memory note."""

    id: str
    task_id: str


class ClearedOut(BaseModel):
    """How many working-memory notes were forgotten."""

    cleared: int


class FineTuneRunsOut(BaseModel):
    """A page of fine-tune runs, newest first, and how many runs there are."""

    runs: list[FineTuneRun]
    total: int


class CheckpointsOut(BaseModel):
    """Every checkpoint of the registry, newest first (the active one marked)."""

    checkpoints: list[CheckpointRecord]


class FineTuneCancelledOut(BaseModel):
    """The cancelled run's id (null when no run was active)."""

    run_id: str | None
    cancelled: bool


class ConversationsOut(BaseModel):
    """A page of the agent's conversations, latest append first."""

    conversations: list[ConversationInfo]


class ConversationBackfillOut(BaseModel):
    """How many messages the backfill embedded, and how many still have no vector."""

    embedded: int
    remaining: int
