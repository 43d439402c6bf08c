"""The operational records of an agent system (seed 001, "Operational Data Persistence").

Beside its memories an agent system produces tasks, cost records, messages, audit entries and
runtime state while it runs. Each kind is one frozen pydantic model here; the repositories of
:mod:`memvault.persistence` take and return these models, on every backend, with no ORM rows or
transfer objects in between.

Every model validates what it holds: ids are non-blank and bounded, free text and JSON payloads
are bounded (:data:`MAX_TEXT`, :data:`MAX_PAYLOAD`), timestamps are timezone-aware (naive ones
are refused rather than guessed), counts are non-negative. A record that fails validation never
reaches a table.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any
from uuid import uuid4

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

__all__ = [
    "ACTIVE_AGENT_STATUSES",
    "MAX_PAYLOAD",
    "MAX_TEXT",
    "TASK_TRANSITIONS",
    "AgentRuntimeState",
    "AgentStatus",
    "Artifact",
    "AuditEntry",
    "AuditVerdict",
    "Checkpoint",
    "CheckpointWrite",
    "CollaborationMetric",
    "CostGroup",
    "CostKind",
    "CostRecord",
    "CostSummary",
    "CustomPreset",
    "Heartbeat",
    "LifecycleEvent",
    "Message",
    "ParkedContext",
    "Project",
    "ProjectStatus",
    "RiskLevel",
    "Setting",
    "Task",
    "TaskMetric",
    "TaskStatus",
    "User",
    "new_id",
    "utcnow",
]

MAX_TEXT = 100_000
"""Characters of one free-text field (a message's content, a task's description)."""
MAX_PAYLOAD = 1_000_000
"""Bytes of one JSON payload (metadata, a parked context's state, a checkpoint) once encoded."""


def new_id() -> str:
    """A fresh random record id (32 hex characters)."""
    return uuid4().hex


def utcnow() -> datetime:
    """The current time, timezone-aware UTC (the default of every timestamp)."""
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        msg = "timestamps must be timezone-aware (e.g. datetime.now(UTC))"
        raise ValueError(msg)
    return value.astimezone(UTC)


def _bounded_json(value: dict[str, Any]) -> dict[str, Any]:
    try:
        size = len(json.dumps(value, separators=(",", ":"), default=str).encode())
    except (TypeError, ValueError) as exc:  # circular references
        msg = f"payload is not JSON-serialisable: {exc}"
        raise ValueError(msg) from None
    if size > MAX_PAYLOAD:
        msg = f"payload is {size} bytes encoded; the limit is {MAX_PAYLOAD}"
        raise ValueError(msg)
    return value


def _bounded_bytes(value: bytes) -> bytes:
    if len(value) > MAX_PAYLOAD * 16:
        msg = f"blob is {len(value)} bytes; the limit is {MAX_PAYLOAD * 16}"
        raise ValueError(msg)
    return value


Id = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=256)]
"""A record or reference id: non-blank, at most 256 characters."""
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=512)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Time = Annotated[datetime, AfterValidator(_aware)]
Payload = Annotated[dict[str, Any], AfterValidator(_bounded_json)]
Blob = Annotated[bytes, AfterValidator(_bounded_bytes)]


class _Record(BaseModel):
    # Bytes travel as base64 in the JSON body a table row keeps (checkpoints are pickled or
    # msgpack'd by the frameworks and are not UTF-8).
    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )


# -- tasks and projects ---------------------------------------------------------------------------


class TaskStatus(StrEnum):
    """Where a task is in its life (seed 001's task lifecycle)."""

    CREATED = "created"
    ASSIGNED = "assigned"
    IN_PROGRESS = "in_progress"
    IN_REVIEW = "in_review"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.CREATED: frozenset(
        {TaskStatus.ASSIGNED, TaskStatus.IN_PROGRESS, TaskStatus.CANCELLED}
    ),
    TaskStatus.ASSIGNED: frozenset(
        {TaskStatus.IN_PROGRESS, TaskStatus.CREATED, TaskStatus.BLOCKED, TaskStatus.CANCELLED}
    ),
    TaskStatus.IN_PROGRESS: frozenset(
        {
            TaskStatus.IN_REVIEW,
            TaskStatus.BLOCKED,
            TaskStatus.COMPLETED,
            TaskStatus.FAILED,
            TaskStatus.CANCELLED,
        }
    ),
    TaskStatus.IN_REVIEW: frozenset(
        {TaskStatus.IN_PROGRESS, TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
    ),
    TaskStatus.BLOCKED: frozenset(
        {TaskStatus.ASSIGNED, TaskStatus.IN_PROGRESS, TaskStatus.FAILED, TaskStatus.CANCELLED}
    ),
    # A failed task may be retried; completed and cancelled are final.
    TaskStatus.FAILED: frozenset({TaskStatus.ASSIGNED, TaskStatus.IN_PROGRESS}),
    TaskStatus.COMPLETED: frozenset(),
    TaskStatus.CANCELLED: frozenset(),
}
"""The status changes :meth:`TaskRepository.transition` allows (anything else is refused)."""


class Task(_Record):
    """A unit of work an agent is given."""

    id: Id = Field(default_factory=new_id)
    title: Name
    description: Text = ""
    status: TaskStatus = TaskStatus.CREATED
    assigned_to: Id | None = None
    """The agent working on it."""
    project: Id | None = None
    priority: int = Field(default=0, ge=-1000, le=1000)
    created_at: Time = Field(default_factory=utcnow)
    updated_at: Time = Field(default_factory=utcnow)
    metadata: Payload = Field(default_factory=dict)


class ProjectStatus(StrEnum):
    """Where a project is."""

    PLANNED = "planned"
    ACTIVE = "active"
    ON_HOLD = "on_hold"
    COMPLETED = "completed"
    ARCHIVED = "archived"


class Project(_Record):
    """A group of tasks with a lead."""

    id: Id = Field(default_factory=new_id)
    name: Name
    description: Text = ""
    status: ProjectStatus = ProjectStatus.ACTIVE
    lead: Id | None = None
    created_at: Time = Field(default_factory=utcnow)
    metadata: Payload = Field(default_factory=dict)


class Artifact(_Record):
    """Something a task produced (a file, a report, a patch), by reference or inline."""

    id: Id = Field(default_factory=new_id)
    task_id: Id | None = None
    created_by: Id
    artifact_type: Id
    name: Name
    uri: Text | None = None
    content: Text = ""
    created_at: Time = Field(default_factory=utcnow)
    metadata: Payload = Field(default_factory=dict)


# -- costs -------------------------------------------------------------------------------------


class CostKind(StrEnum):
    """What kind of model call a cost record is for."""

    LLM = "llm"
    EMBEDDING = "embedding"


class CostRecord(_Record):
    """One model call and what it cost (tokens always; money when a price is configured)."""

    id: Id = Field(default_factory=new_id)
    agent_id: Id
    task_id: Id | None = None
    model: Id
    provider: Id | None = None
    kind: CostKind = CostKind.LLM
    operation: Id | None = None
    """What the call was for (``extraction``, ``consolidation``, ``embed``...)."""
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    latency_ms: float = Field(default=0.0, ge=0)
    cost: float | None = Field(default=None, ge=0)
    """In the price table's currency; None when no price is configured for the model."""
    timestamp: Time = Field(default_factory=utcnow)


class CostGroup(StrEnum):
    """What :meth:`CostRecordRepository.summarize` groups by."""

    AGENT = "agent"
    TASK = "task"
    MODEL = "model"
    DAY = "day"


class CostSummary(_Record):
    """Cost records summed over one group (one agent, task, model or UTC day)."""

    group: str | None
    """The agent id, task id, model or ``YYYY-MM-DD`` (None: records without a task)."""
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float
    """Summed over the records that have a cost."""
    latency_ms: float
    """Mean latency of the calls."""


# -- messages, audit ---------------------------------------------------------------------------


class Message(_Record):
    """One message on a channel (a chat thread, an agents' channel, a session's history)."""

    id: Id = Field(default_factory=new_id)
    channel: Id
    agent_id: Id | None = None
    """The agent whose history this is (who may read it with an agent key)."""
    sender: Id
    role: Id = "user"
    content: Text = ""
    timestamp: Time = Field(default_factory=utcnow)
    metadata: Payload = Field(default_factory=dict)
    """Framework-specific payload (an OpenAI Agents item, a pydantic-ai message)."""


class AuditVerdict(StrEnum):
    """What a security check decided about an action."""

    ALLOWED = "allowed"
    DENIED = "denied"
    ESCALATED = "escalated"
    FLAGGED = "flagged"


class RiskLevel(StrEnum):
    """How risky an audited action was judged."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class AuditEntry(_Record):
    """One audited action of an agent (a tool call, a data access) and its verdict."""

    id: Id = Field(default_factory=new_id)
    agent_id: Id
    action_type: Id
    verdict: AuditVerdict = AuditVerdict.ALLOWED
    risk_level: RiskLevel = RiskLevel.LOW
    tool_name: Id | None = None
    task_id: Id | None = None
    detail: Text = ""
    timestamp: Time = Field(default_factory=utcnow)
    metadata: Payload = Field(default_factory=dict)


# -- runtime state -----------------------------------------------------------------------------


class AgentStatus(StrEnum):
    """What an agent is doing now."""

    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    WAITING = "waiting"
    CRASHED = "crashed"
    STOPPED = "stopped"


ACTIVE_AGENT_STATUSES = frozenset({AgentStatus.RUNNING, AgentStatus.PAUSED, AgentStatus.WAITING})
"""The statuses :meth:`AgentStateRepository.active` lists."""


class AgentRuntimeState(_Record):
    """An agent's current runtime state (one row per agent, replaced on every save)."""

    agent_id: Id
    status: AgentStatus = AgentStatus.IDLE
    execution_id: Id | None = None
    task_id: Id | None = None
    updated_at: Time = Field(default_factory=utcnow)
    detail: Payload = Field(default_factory=dict)


class ParkedContext(_Record):
    """A run set aside (waiting for approval, a timeout, a human) with what resumes it."""

    id: Id = Field(default_factory=new_id)
    execution_id: Id
    agent_id: Id
    task_id: Id | None = None
    reason: Text = ""
    state: Payload = Field(default_factory=dict)
    """Whatever the run needs to continue (its step, its pending inputs)."""
    parked_at: Time = Field(default_factory=utcnow)


class Heartbeat(_Record):
    """The latest sign of life of one execution; a stale one marks a crashed run."""

    execution_id: Id
    agent_id: Id
    task_id: Id | None = None
    status: Id = "running"
    progress: Payload = Field(default_factory=dict)
    """Where the run was (its last completed step), for a resume."""
    beat_at: Time = Field(default_factory=utcnow)


class LifecycleEvent(_Record):
    """An agent lifecycle event (hired, started, paused, crashed, retired...)."""

    id: Id = Field(default_factory=new_id)
    agent_id: Id
    event_type: Id
    timestamp: Time = Field(default_factory=utcnow)
    detail: Payload = Field(default_factory=dict)


class TaskMetric(_Record):
    """How one task went: duration, turns, tokens, cost, outcome."""

    id: Id = Field(default_factory=new_id)
    task_id: Id
    agent_id: Id
    duration_ms: float = Field(default=0.0, ge=0)
    turns: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0)
    success: bool = True
    recorded_at: Time = Field(default_factory=utcnow)


class CollaborationMetric(_Record):
    """A measure of how two agents worked together (hand-offs, messages, disagreements)."""

    id: Id = Field(default_factory=new_id)
    agent_id: Id
    peer_id: Id
    metric: Id
    value: float = 0.0
    recorded_at: Time = Field(default_factory=utcnow)


# -- settings, presets, users ------------------------------------------------------------------


class Setting(_Record):
    """One runtime setting: a JSON value under a namespace and key."""

    namespace: Id
    key: Id
    value: Any = None
    updated_at: Time = Field(default_factory=utcnow)


class CustomPreset(_Record):
    """A user-defined personality or configuration preset, by name."""

    name: Id
    description: Text = ""
    config: Payload = Field(default_factory=dict)
    created_at: Time = Field(default_factory=utcnow)


class User(_Record):
    """A human user of the agent system."""

    id: Id = Field(default_factory=new_id)
    username: Id
    display_name: Name | None = None
    role: Id = "member"
    created_at: Time = Field(default_factory=utcnow)


# -- framework checkpoints ---------------------------------------------------------------------


class Checkpoint(_Record):
    """One checkpoint of a graph run (LangGraph's: the channel values after a super-step).

    ``data`` and ``metadata`` are what the framework's serializer made of them (bytes with
    their ``type`` tag); the store never interprets them.
    """

    thread_id: Id
    checkpoint_ns: Annotated[str, StringConstraints(max_length=256)] = ""
    checkpoint_id: Id
    parent_checkpoint_id: Id | None = None
    type: Id
    data: Blob
    metadata_type: Id | None = None
    metadata: Blob = b""
    created_at: Time = Field(default_factory=utcnow)


class CheckpointWrite(_Record):
    """One pending write of a task towards the next checkpoint (LangGraph's ``put_writes``)."""

    thread_id: Id
    checkpoint_ns: Annotated[str, StringConstraints(max_length=256)] = ""
    checkpoint_id: Id
    task_id: Id
    idx: int
    channel: Id
    type: Id
    data: Blob
    task_path: Annotated[str, StringConstraints(max_length=1024)] = ""
