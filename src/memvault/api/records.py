"""The operator's view of seed 001's operational records: inputs, implementations, renderings.

The operations themselves are declared in :mod:`memvault.api.operations` (one entry each, so
REST, MCP, the CLI and the remote client derive from the same table); what they take, do and
return is here, kept apart from the memory operations. Every implementation runs on the
tenant's :attr:`memvault.memory.AsyncMemory.operations` and is scoped like the memories: under
the :data:`~memvault.api.policy.SELF` policy an agent key reads and writes only records that
belong to it (a task assigned to it, its cost records, its messages, its audit entries, its
runtime state); a record of another agent is "not found" to it, never "forbidden" (which would
confirm the id exists). Settings are tenant-wide and for human and admin callers only.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator, BaseModel, Field

from memvault.api.policy import Call
from memvault.api.requests import AgentId, Request
from memvault.errors import MemoryNotFoundError
from memvault.memory import AsyncMemory
from memvault.persistence import models as pm

__all__ = [
    "AgentStateBody",
    "AgentStateParams",
    "AgentStatesParams",
    "AuditEntriesParams",
    "AuditEntryBody",
    "ChannelMessagesParams",
    "CostSummaryParams",
    "CostsParams",
    "MessageBody",
    "SettingBody",
    "SettingParams",
    "SettingsParams",
    "TaskBody",
    "TaskParams",
    "TaskStatusBody",
    "TasksParams",
]


def _utc(value: datetime | None) -> datetime | None:
    # A time given without an offset over REST or the CLI is read as UTC (the records are
    # stamped in UTC), rather than refused.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


Since = Annotated[
    datetime | None,
    AfterValidator(_utc),
    Field(default=None, description="From this moment (inclusive; UTC when no offset)."),
]
Until = Annotated[
    datetime | None,
    AfterValidator(_utc),
    Field(default=None, description="Before this moment (exclusive; UTC when no offset)."),
]
OptionalAgent = Field(
    default=None,
    min_length=1,
    max_length=200,
    description="One agent (an agent key: itself, the default; others: every agent).",
)
Limit = Field(default=100, ge=1, le=10_000, description="How many at most.")
RecordId = Field(min_length=1, max_length=256, description="The record's id.")


class _Memories(Protocol):
    async def memory(self, tenant: str = ...) -> AsyncMemory: ...


async def _ops(host: _Memories, call: Call) -> Any:
    return (await host.memory(call.tenant)).operations


def _mine(call: Call, owner: str | None, what: str, key: str) -> None:
    """Not found unless the call may see a record owned by ``owner``."""
    if call.agent is not None and owner != call.agent:
        msg = f"no {what} {key!r}"
        raise MemoryNotFoundError(msg)


# -- tasks ------------------------------------------------------------------------------------


class TasksParams(Request):
    """Tasks, oldest first: by status, assignee (agent) and project."""

    agent_id: str | None = OptionalAgent
    status: pm.TaskStatus | None = Field(default=None, description="Only tasks in this status.")
    project: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only tasks of this project."
    )
    limit: int = Limit
    offset: int = Field(default=0, ge=0, le=1_000_000, description="Skip this many first.")


class TaskParams(Request):
    """One task."""

    task_id: str = RecordId
    agent_id: str | None = OptionalAgent


class TaskBody(Request):
    """A new task (assigned to ``agent_id``; an agent key may only create its own)."""

    agent_id: str | None = OptionalAgent
    title: str = Field(min_length=1, max_length=512, description="What the task is.")
    description: str = Field(default="", max_length=pm.MAX_TEXT, description="Its details.")
    project: str | None = Field(
        default=None, min_length=1, max_length=256, description="The project it belongs to."
    )
    priority: int = Field(default=0, ge=-1000, le=1000, description="Higher is more urgent.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Any JSON object.")


class TaskStatusBody(Request):
    """Move a task to another status (the allowed changes are checked)."""

    task_id: str = RecordId
    status: pm.TaskStatus = Field(description="The status to move the task to.")
    agent_id: str | None = OptionalAgent


async def tasks(host: _Memories, call: Call, req: TasksParams) -> tuple[pm.Task, ...]:
    """The tasks matching the filters."""
    ops = await _ops(host, call)
    found: tuple[pm.Task, ...] = await ops.tasks.list_tasks(
        status=req.status,
        assigned_to=call.agent,
        project=req.project,
        limit=req.limit,
        offset=req.offset,
    )
    return found


async def task(host: _Memories, call: Call, req: TaskParams) -> pm.Task:
    """One task (not found for an agent it is not assigned to)."""
    found: pm.Task | None = await (await _ops(host, call)).tasks.get(req.task_id)
    if found is None:
        msg = f"no task {req.task_id!r}"
        raise MemoryNotFoundError(msg)
    _mine(call, found.assigned_to, "task", req.task_id)
    return found


async def create_task(host: _Memories, call: Call, req: TaskBody) -> pm.Task:
    """Store a new task."""
    made = pm.Task(
        title=req.title,
        description=req.description,
        assigned_to=call.agent,
        project=req.project,
        priority=req.priority,
        metadata=req.metadata,
        status=pm.TaskStatus.ASSIGNED if call.agent else pm.TaskStatus.CREATED,
    )
    await (await _ops(host, call)).tasks.save(made)
    return made


async def set_task_status(host: _Memories, call: Call, req: TaskStatusBody) -> pm.Task:
    """Move a task to another status."""
    await task(host, call, TaskParams(task_id=req.task_id, agent_id=call.agent))
    moved: pm.Task = await (await _ops(host, call)).tasks.transition(req.task_id, req.status)
    return moved


async def delete_task(host: _Memories, call: Call, req: TaskParams) -> bool:
    """Delete a task; False if there was none."""
    ops = await _ops(host, call)
    found = await ops.tasks.get(req.task_id)
    if found is None or (call.agent is not None and found.assigned_to != call.agent):
        return False  # another agent's task reads as missing, as for the other routes
    deleted: bool = await ops.tasks.delete(req.task_id)
    return deleted


# -- costs ------------------------------------------------------------------------------------


class CostsParams(Request):
    """Cost records of memvault's model calls (and any an application saves), oldest first."""

    agent_id: str | None = OptionalAgent
    task_id: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only this task's calls."
    )
    model: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only this model's calls."
    )
    since: Since = None
    until: Until = None
    limit: int = Limit


class CostSummaryParams(Request):
    """Costs summed per agent, task, model or UTC day, costliest first."""

    by: pm.CostGroup = Field(default=pm.CostGroup.AGENT, description="What to group by.")
    agent_id: str | None = OptionalAgent
    task_id: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only this task's calls."
    )
    model: str | None = Field(
        default=None, min_length=1, max_length=256, description="Only this model's calls."
    )
    since: Since = None
    until: Until = None
    limit: int = Limit


async def costs(host: _Memories, call: Call, req: CostsParams) -> tuple[pm.CostRecord, ...]:
    """The cost records matching the filters."""
    found: tuple[pm.CostRecord, ...] = await (await _ops(host, call)).cost_records.query(
        agent_id=call.agent,
        task_id=req.task_id,
        model=req.model,
        since=req.since,
        until=req.until,
        limit=req.limit,
    )
    return found


async def cost_summary(
    host: _Memories, call: Call, req: CostSummaryParams
) -> tuple[pm.CostSummary, ...]:
    """The sums per group."""
    found: tuple[pm.CostSummary, ...] = await (await _ops(host, call)).cost_records.summarize(
        req.by,
        agent_id=call.agent,
        task_id=req.task_id,
        model=req.model,
        since=req.since,
        until=req.until,
        limit=req.limit,
    )
    return found


# -- messages ---------------------------------------------------------------------------------


class ChannelMessagesParams(Request):
    """A channel's messages in the order written (the latest ``limit``)."""

    channel: str = Field(min_length=1, max_length=256, description="The channel.")
    agent_id: str | None = OptionalAgent
    since: Since = None
    until: Until = None
    limit: int = Limit


class MessageBody(Request):
    """A message to append to a channel."""

    channel: str = Field(min_length=1, max_length=256, description="The channel.")
    agent_id: str | None = OptionalAgent
    sender: str | None = Field(
        default=None, min_length=1, max_length=256, description="Who wrote it (default: you)."
    )
    role: str = Field(
        default="user", min_length=1, max_length=64, description="user, assistant, tool..."
    )
    content: str = Field(max_length=pm.MAX_TEXT, description="The message text.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Any JSON object.")


async def channel_messages(
    host: _Memories, call: Call, req: ChannelMessagesParams
) -> tuple[pm.Message, ...]:
    """The channel's history (an agent's own messages on it, for an agent key)."""
    found: tuple[pm.Message, ...] = await (await _ops(host, call)).messages.get_history(
        req.channel, limit=req.limit, since=req.since, until=req.until, agent_id=call.agent
    )
    return found


async def post_message(host: _Memories, call: Call, req: MessageBody) -> pm.Message:
    """Append a message to the channel."""
    made = pm.Message(
        channel=req.channel,
        agent_id=call.agent,
        sender=req.sender or call.agent or call.actor.label,
        role=req.role,
        content=req.content,
        metadata=req.metadata,
    )
    await (await _ops(host, call)).messages.save(made)
    return made


# -- audit entries ----------------------------------------------------------------------------


class AuditEntriesParams(Request):
    """Audited actions of agents, newest first: by agent, action, verdict, risk and time."""

    agent_id: str | None = OptionalAgent
    action_type: str | None = Field(default=None, min_length=1, max_length=256)
    verdict: pm.AuditVerdict | None = None
    risk_level: pm.RiskLevel | None = None
    since: Since = None
    until: Until = None
    limit: int = Limit


class AuditEntryBody(Request):
    """An audited action to record (an agent key records its own)."""

    agent_id: str = AgentId
    action_type: str = Field(min_length=1, max_length=256)
    verdict: pm.AuditVerdict = pm.AuditVerdict.ALLOWED
    risk_level: pm.RiskLevel = pm.RiskLevel.LOW
    tool_name: str | None = Field(default=None, min_length=1, max_length=256)
    task_id: str | None = Field(default=None, min_length=1, max_length=256)
    detail: str = Field(default="", max_length=pm.MAX_TEXT)
    metadata: dict[str, Any] = Field(default_factory=dict)


async def audit_entries(
    host: _Memories, call: Call, req: AuditEntriesParams
) -> tuple[pm.AuditEntry, ...]:
    """The audit entries matching the filters, newest first."""
    found: tuple[pm.AuditEntry, ...] = await (await _ops(host, call)).audit_entries.query(
        agent_id=call.agent,
        action_type=req.action_type,
        verdict=req.verdict,
        risk_level=req.risk_level,
        since=req.since,
        until=req.until,
        limit=req.limit,
        newest_first=True,
    )
    return found


async def record_audit_entry(host: _Memories, call: Call, req: AuditEntryBody) -> pm.AuditEntry:
    """Store one audit entry."""
    made = pm.AuditEntry(
        agent_id=call.agent_id,
        action_type=req.action_type,
        verdict=req.verdict,
        risk_level=req.risk_level,
        tool_name=req.tool_name,
        task_id=req.task_id,
        detail=req.detail,
        metadata=req.metadata,
    )
    await (await _ops(host, call)).audit_entries.save(made)
    return made


# -- agent runtime states ---------------------------------------------------------------------


class AgentStatesParams(Request):
    """Agents' runtime states (``active``: running, paused or waiting only)."""

    agent_id: str | None = OptionalAgent
    active: bool = Field(default=False, description="Only running, paused or waiting agents.")
    status: pm.AgentStatus | None = None


class AgentStateParams(Request):
    """One agent's runtime state."""

    agent_id: str = AgentId


class AgentStateBody(Request):
    """Set an agent's runtime state."""

    agent_id: str = AgentId
    status: pm.AgentStatus
    execution_id: str | None = Field(default=None, min_length=1, max_length=256)
    task_id: str | None = Field(default=None, min_length=1, max_length=256)
    detail: dict[str, Any] = Field(default_factory=dict)


async def agent_states(
    host: _Memories, call: Call, req: AgentStatesParams
) -> tuple[pm.AgentRuntimeState, ...]:
    """The states matching the filters (an agent key: its own)."""
    repo = (await _ops(host, call)).agent_states
    if call.agent is not None:
        one = await repo.get(call.agent)
        found = () if one is None else (one,)
    else:
        found = await (repo.active() if req.active else repo.list_states(status=req.status))
    return tuple(
        s
        for s in found
        if (not req.active or s.status in pm.ACTIVE_AGENT_STATUSES)
        and (req.status is None or s.status is req.status)
    )


async def agent_state(host: _Memories, call: Call, req: AgentStateParams) -> pm.AgentRuntimeState:
    """One agent's state."""
    found: pm.AgentRuntimeState | None = await (await _ops(host, call)).agent_states.get(
        call.agent_id
    )
    if found is None:
        msg = f"no runtime state for agent {call.agent_id!r}"
        raise MemoryNotFoundError(msg)
    return found


async def set_agent_state(host: _Memories, call: Call, req: AgentStateBody) -> pm.AgentRuntimeState:
    """Replace one agent's state."""
    made = pm.AgentRuntimeState(
        agent_id=call.agent_id,
        status=req.status,
        execution_id=req.execution_id,
        task_id=req.task_id,
        detail=req.detail,
    )
    await (await _ops(host, call)).agent_states.save(made)
    return made


# -- settings ---------------------------------------------------------------------------------

_KEY = Field(min_length=1, max_length=256)


class SettingsParams(Request):
    """The tenant's runtime settings (of one namespace, or all)."""

    namespace: str | None = Field(default=None, min_length=1, max_length=256)


class SettingParams(Request):
    """One setting."""

    namespace: str = _KEY
    key: str = _KEY


class SettingBody(Request):
    """Set one setting to a JSON value."""

    namespace: str = _KEY
    key: str = _KEY
    value: Any = Field(description="Any JSON value.")


async def settings(host: _Memories, call: Call, req: SettingsParams) -> tuple[pm.Setting, ...]:
    """The settings, by namespace and key."""
    repo = (await _ops(host, call)).settings
    found: tuple[pm.Setting, ...] = await (
        repo.get_namespace(req.namespace) if req.namespace else repo.get_all()
    )
    return found


async def setting(host: _Memories, call: Call, req: SettingParams) -> pm.Setting:
    """One setting."""
    found: pm.Setting | None = await (await _ops(host, call)).settings.get(req.namespace, req.key)
    if found is None:
        msg = f"no setting {req.namespace}/{req.key}"
        raise MemoryNotFoundError(msg)
    return found


async def put_setting(host: _Memories, call: Call, req: SettingBody) -> pm.Setting:
    """Store one setting."""
    made = pm.Setting(namespace=req.namespace, key=req.key, value=req.value)
    await (await _ops(host, call)).settings.save(made)
    return made


async def delete_setting(host: _Memories, call: Call, req: SettingParams) -> bool:
    """Delete one setting; False if there was none."""
    deleted: bool = await (await _ops(host, call)).settings.delete(req.namespace, req.key)
    return deleted


# -- JSON -------------------------------------------------------------------------------------


def record_json(record: BaseModel, _req: Any = None) -> Any:
    """A record as JSON."""
    return record.model_dump(mode="json")


def records_json(key: str) -> Any:
    """Render a sequence of records under ``key``."""
    return lambda rows, _req: {key: [r.model_dump(mode="json") for r in rows]}


class TasksOut(BaseModel):
    """Tasks."""

    tasks: list[pm.Task]


class CostsOut(BaseModel):
    """Cost records."""

    records: list[pm.CostRecord]


class CostSummaryOut(BaseModel):
    """Cost sums per group."""

    groups: list[pm.CostSummary]


class MessagesOut(BaseModel):
    """A channel's messages."""

    messages: list[pm.Message]


class AuditEntriesOut(BaseModel):
    """Audit entries."""

    entries: list[pm.AuditEntry]


class AgentStatesOut(BaseModel):
    """Agents' runtime states."""

    states: list[pm.AgentRuntimeState]


class SettingsOut(BaseModel):
    """Settings."""

    settings: list[pm.Setting]
